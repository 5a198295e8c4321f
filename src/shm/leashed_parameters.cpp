#include "shm/leashed_parameters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <thread>

#include "core/error.hpp"

namespace ptrain {

namespace {

// A thread holds at most two vectors at once (the latest it copies from and
// the one it builds), and the latest holds one: 2T + 1. The rest is slack for
// vectors a stale reader still pins for a moment.
size_t pool_size(int threads) { return 2 * static_cast<size_t>(threads) + 3; }

}  // namespace

LeashedParameters::LeashedParameters(std::span<const float> initial, int threads, int persistence,
                                     const OptimizerConfig& optimizer)
    : LeashedParameters(initial, threads, persistence, make_optimizer(optimizer, 0)) {}

LeashedParameters::LeashedParameters(std::span<const float> initial, int threads, int persistence,
                                     std::unique_ptr<Optimizer> rule)
    : size_(initial.size()),
      rule_(std::move(rule)),
      persistence_(persistence),
      pool_(pool_size(threads), size_ * (1 + rule_->state_slots())) {
  if (persistence < -1)
    throw Error(fmt::format("strategy.persistence must be -1 (no bound) or at least 0 (got {})", persistence));
  ParamVersion* first = pool_.take();  // its reference is the latest's
  std::fill(first->values.begin(), first->values.end(), 0.0f);  // the optimizer's state starts at zero
  std::copy(initial.begin(), initial.end(), first->values.begin());
  first->version = 0;
  first->parent = 0;
  latest_.store(first, std::memory_order_release);
}

LeashedParameters::~LeashedParameters() { pool_.unref(latest_.load(std::memory_order_acquire)); }

ParamVersion* LeashedParameters::acquire_latest() {
  while (true) {
    ParamVersion* v = latest_.load(std::memory_order_acquire);
    if (v->try_ref()) {
      // Still the latest after the reference was taken: it cannot be recycled
      // before we let go, and its values are the published ones.
      if (latest_.load(std::memory_order_acquire) == v) return v;
      pool_.unref(v);
    }
  }
}

ParamVersion* LeashedParameters::take_vector() {
  // Empty only while stale readers pin a vector for a moment (see pool_size).
  while (true) {
    if (ParamVersion* v = pool_.take()) return v;
    std::this_thread::yield();
  }
}

uint64_t LeashedParameters::read(std::span<float> local, Backoff&, ThreadCounters&) {
  ParamVersion* v = acquire_latest();
  assert(local.size() == size_);
  std::copy_n(v->values.begin(), size_, local.begin());
  const uint64_t version = v->version;
  pool_.unref(v);
  return version;
}

ApplyOutcome LeashedParameters::apply(std::span<const float> grad, uint64_t read_version, int, Backoff& backoff,
                                      ThreadCounters& counters, std::span<float>, float lr_scale) {
  ParamVersion* next = take_vector();
  const size_t slots = rule_->state_slots();
  for (int failures = 0;; ++failures) {
    ParamVersion* current = acquire_latest();
    // The latest parameters and optimizer state, then one step on the copy.
    std::copy(current->values.begin(), current->values.end(), next->values.begin());
    OptimizerState state{{}, static_cast<int64_t>(current->version), lr_scale};
    for (size_t k = 0; k < slots; ++k) state.slots[k] = next->values.data() + (1 + k) * size_;
    rule_->step_with({next->values.data(), size_}, grad, state);
    next->version = current->version + 1;
    next->parent = current->version;
    ParamVersion* expected = current;
    // Release: whoever sees `next` as the latest sees its values.
    if (latest_.compare_exchange_strong(expected, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
      const uint64_t staleness = current->version - std::min(current->version, read_version);
      pool_.unref(current);  // ours
      pool_.unref(current);  // the latest's, now next's
      backoff.reset();
      ++counters.applied;
      return {true, staleness, false, 0};
    }
    pool_.unref(current);
    ++counters.failed_swaps;
    if (persistence_ >= 0 && failures >= persistence_) {
      pool_.unref(next);
      ++counters.dropped;
      return {false, 0, false, 0};
    }
    backoff.wait();
  }
}

void LeashedParameters::snapshot(std::span<float> out) const {
  const ParamVersion* v = latest_.load(std::memory_order_acquire);
  std::copy_n(v->values.begin(), size_, out.begin());
}

uint64_t LeashedParameters::updates() const { return latest_.load(std::memory_order_acquire)->version; }

void LeashedParameters::save_state(StateWriter& out) const {
  const ParamVersion* v = latest_.load(std::memory_order_acquire);
  out.put("shm.params", std::span<const float>(v->values).first(size_));
  out.put_value("shm.updates", v->version);
  // The optimizer's state travels with the version (its step count is the version number).
  out.put("leashed.optimizer_state", std::span<const float>(v->values).subspan(size_));
  out.put_value("leashed.parent", v->parent);
}

void LeashedParameters::load_state(StateReader& in) {
  ParamVersion* v = latest_.load(std::memory_order_acquire);
  in.take("shm.params", std::span<float>(v->values).first(size_));
  v->version = take_update_count(in, "shm.updates");  // Adam's step count too
  in.take("leashed.optimizer_state", std::span<float>(v->values).subspan(size_));
  v->parent = in.take_value<uint64_t>("leashed.parent");
}

uint64_t LeashedParameters::latest_parent() const { return latest_.load(std::memory_order_acquire)->parent; }

std::vector<std::pair<std::string, std::string>> LeashedParameters::notes(const ThreadCounters& totals) const {
  const double applied = static_cast<double>(totals.applied);
  return {{"swaps", fmt::format("{:.3f} failed per update, {} gradient(s) dropped",
                                applied > 0 ? static_cast<double>(totals.failed_swaps) / applied : 0.0,
                                totals.dropped)}};
}

ShmConfig LeashedOptions::shm_config() const {
  ShmConfig c = checks_config(name, [persistence = persistence](const ShmConfig& c, std::span<float> initial)
                                        -> std::unique_ptr<SharedParameters> {
    return std::make_unique<LeashedParameters>(initial, c.threads, persistence, c.optimizer);
  });
  apply_backoff(c);
  return c;
}

}  // namespace ptrain
