#include "shm/locked_parameters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "core/error.hpp"

namespace ptrain {

namespace {

// Takes the lock, counting a contended acquisition; with backoff, retries
// try-lock with growing waits instead of queueing on the lock.
template <typename TryLock, typename Lock>
void acquire(TryLock try_lock, Lock lock, Backoff& backoff, ThreadCounters& counters) {
  if (try_lock()) return;
  ++counters.contended_locks;
  if (!backoff.enabled()) {
    lock();
    return;
  }
  do backoff.wait();
  while (!try_lock());
  backoff.reset();
}

// The parameters and the update count, then the optimizer's own records:
// the state seq and the locks keep together.
void save_guarded(StateWriter& out, std::span<const float> params, uint64_t version, const Optimizer& optimizer) {
  out.put("shm.params", params);
  out.put_value("shm.updates", version);
  optimizer.save_state(out);
}

uint64_t load_guarded(StateReader& in, std::span<float> params, Optimizer& optimizer) {
  in.take("shm.params", params);
  const auto version = take_update_count(in, "shm.updates");
  optimizer.load_state(in);
  return version;
}

}  // namespace

LockedParameters::LockedParameters(std::span<const float> initial, bool shared_reads,
                                   const OptimizerConfig& optimizer)
    : shared_reads_(shared_reads),
      lr_(optimizer.lr),
      optimizer_(make_optimizer(optimizer, initial.size())),
      params_(initial.begin(), initial.end()) {}

uint64_t LockedParameters::read(std::span<float> local, Backoff& backoff, ThreadCounters& counters) {
  assert(local.size() == params_.size());
  if (shared_reads_) {
    acquire([&] { return rwlock_.try_lock_shared(); }, [&] { rwlock_.lock_shared(); }, backoff, counters);
    std::shared_lock lock(rwlock_, std::adopt_lock);
    std::copy(params_.begin(), params_.end(), local.begin());
    return version_;
  }
  acquire([&] { return mutex_.try_lock(); }, [&] { mutex_.lock(); }, backoff, counters);
  std::lock_guard lock(mutex_, std::adopt_lock);
  std::copy(params_.begin(), params_.end(), local.begin());
  return version_;
}

ApplyOutcome LockedParameters::apply(std::span<const float> grad, uint64_t read_version, int, Backoff& backoff,
                                     ThreadCounters& counters, std::span<float>, float lr_scale) {
  auto update = [&] {
    optimizer_->set_lr(lr_ * lr_scale);
    optimizer_->step(params_, grad);
    return ApplyOutcome{true, version_++ - read_version, false, 0};
  };
  ++counters.applied;
  if (shared_reads_) {
    acquire([&] { return rwlock_.try_lock(); }, [&] { rwlock_.lock(); }, backoff, counters);
    std::unique_lock lock(rwlock_, std::adopt_lock);
    return update();
  }
  acquire([&] { return mutex_.try_lock(); }, [&] { mutex_.lock(); }, backoff, counters);
  std::lock_guard lock(mutex_, std::adopt_lock);
  return update();
}

void LockedParameters::snapshot(std::span<float> out) const { std::copy(params_.begin(), params_.end(), out.begin()); }

uint64_t LockedParameters::updates() const {
  // Only called while no thread runs (the runner's checks) or for tests after the run.
  return version_;
}

void LockedParameters::save_state(StateWriter& out) const { save_guarded(out, params_, version_, *optimizer_); }

void LockedParameters::load_state(StateReader& in) { version_ = load_guarded(in, params_, *optimizer_); }

uint64_t SequentialParameters::read(std::span<float> local, Backoff&, ThreadCounters&) {
  if (local.data() != params_.data()) std::copy(params_.begin(), params_.end(), local.begin());
  return version_;
}

SequentialParameters::SequentialParameters(std::span<float> replica, const OptimizerConfig& optimizer)
    : params_(replica), lr_(optimizer.lr), optimizer_(make_optimizer(optimizer, replica.size())) {}

ApplyOutcome SequentialParameters::apply(std::span<const float> grad, uint64_t, int, Backoff&,
                                         ThreadCounters& counters, std::span<float>, float lr_scale) {
  optimizer_->set_lr(lr_ * lr_scale);
  optimizer_->step(params_, grad);
  ++version_;
  ++counters.applied;
  return {true, 0};
}

void SequentialParameters::snapshot(std::span<float> out) const {
  std::copy(params_.begin(), params_.end(), out.begin());
}

void SequentialParameters::save_state(StateWriter& out) const { save_guarded(out, params_, version_, *optimizer_); }

void SequentialParameters::load_state(StateReader& in) { version_ = load_guarded(in, params_, *optimizer_); }

std::vector<std::pair<std::string, std::string>> LockedParameters::notes(const ThreadCounters& totals) const {
  return {{"locks", fmt::format("{} contended acquisition(s)", totals.contended_locks)}};
}

ShmConfig SeqOptions::shm_config() const {
  return checks_config(name, [](const ShmConfig& c, std::span<float> replica) -> std::unique_ptr<SharedParameters> {
    if (c.threads != 1) throw Error(fmt::format("run.workers must be 1: seq runs one thread (got {})", c.threads));
    return std::make_unique<SequentialParameters>(replica, c.optimizer);
  });
}

ShmConfig LockOptions::lock_config(std::string_view algorithm, bool shared_reads) const {
  ShmConfig c = checks_config(algorithm, [shared_reads](const ShmConfig& c, std::span<float> initial)
                                             -> std::unique_ptr<SharedParameters> {
    return std::make_unique<LockedParameters>(initial, shared_reads, c.optimizer);
  });
  apply_backoff(c);
  return c;
}

ShmConfig MutexOptions::shm_config() const { return lock_config(name, false); }

ShmConfig RwLockOptions::shm_config() const { return lock_config(name, true); }

}  // namespace ptrain
