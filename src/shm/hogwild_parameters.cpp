#include "shm/hogwild_parameters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "core/error.hpp"

namespace ptrain {

static_assert(std::atomic_ref<float>::is_always_lock_free, "HOGWILD! needs lock-free float atomics");

HogwildParameters::HogwildParameters(std::span<const float> initial, int threads,
                                     const OptimizerConfig& optimizer)
    : params_(initial.begin(), initial.end()),
      rule_(make_optimizer(optimizer, 0)),
      threads_(static_cast<size_t>(threads)) {
  for (auto& t : threads_) t.slots.assign(rule_->state_slots() * params_.size(), 0.0f);
}

uint64_t HogwildParameters::read(std::span<float> local, Backoff&, ThreadCounters&) {
  assert(local.size() == params_.size());
  const uint64_t version = completed_.load(std::memory_order_acquire);
  float* shared = params_.data();
  for (size_t i = 0, n = params_.size(); i < n; ++i)
    local[i] = std::atomic_ref<float>(shared[i]).load(std::memory_order_relaxed);
  return version;
}

ApplyOutcome HogwildParameters::apply(std::span<const float> grad, uint64_t read_version, int thread, Backoff&,
                                      ThreadCounters& counters, std::span<float> replica, float lr_scale) {
  const size_t n = params_.size();
  assert(grad.size() == n && (replica.empty() || replica.size() == n));
  ThreadState& own = threads_.at(static_cast<size_t>(thread));
  const uint64_t now = completed_.load(std::memory_order_acquire);
  float* shared = params_.data();
  // Load, step, store, a chunk at a time: another thread's store in between is lost, as in HOGWILD!.
  // The replica takes each new value on the way: the next step's read, in the same pass.
  const bool refresh = !replica.empty();
  const size_t slots = rule_->state_slots();
  float chunk[kChunk];
  for (size_t at = 0; at < n; at += kChunk) {
    const size_t len = std::min(kChunk, n - at);
    for (size_t i = 0; i < len; ++i) chunk[i] = std::atomic_ref<float>(shared[at + i]).load(std::memory_order_relaxed);
    OptimizerState state{{}, own.steps, lr_scale};
    for (size_t k = 0; k < slots; ++k) state.slots[k] = own.slots.data() + k * n + at;
    rule_->step_with({chunk, len}, grad.subspan(at, len), state);
    for (size_t i = 0; i < len; ++i) std::atomic_ref<float>(shared[at + i]).store(chunk[i], std::memory_order_relaxed);
    if (refresh) std::copy(chunk, chunk + len, replica.begin() + static_cast<std::ptrdiff_t>(at));
  }
  ++own.steps;
  const uint64_t after = completed_.fetch_add(1, std::memory_order_acq_rel) + 1;
  ++counters.applied;
  return {true, now - std::min(now, read_version), refresh, after};
}

void HogwildParameters::snapshot(std::span<float> out) const {
  std::copy(params_.begin(), params_.end(), out.begin());
}

void HogwildParameters::save_state(StateWriter& out) const {
  out.put("shm.params", params_);
  out.put_value("shm.updates", completed_.load(std::memory_order_acquire));
  out.put_value("hogwild.threads", static_cast<uint64_t>(threads_.size()));
  for (size_t t = 0; t < threads_.size(); ++t) {
    out.put(fmt::format("hogwild.thread{}.optimizer_state", t), threads_[t].slots);
    out.put_value(fmt::format("hogwild.thread{}.optimizer_steps", t), threads_[t].steps);
  }
}

void HogwildParameters::load_state(StateReader& in) {
  in.take("shm.params", std::span<float>(params_));
  completed_.store(take_update_count(in, "shm.updates"), std::memory_order_release);
  const auto threads = in.take_value<uint64_t>("hogwild.threads");
  if (threads != threads_.size())
    throw Error(fmt::format("{}: holds the optimizer state of {} HOGWILD! threads, this run has {}", in.source(),
                            threads, threads_.size()));
  for (size_t t = 0; t < threads_.size(); ++t) {
    in.take(fmt::format("hogwild.thread{}.optimizer_state", t), std::span<float>(threads_[t].slots));
    threads_[t].steps =
        static_cast<int64_t>(take_update_count(in, fmt::format("hogwild.thread{}.optimizer_steps", t)));
  }
}

ShmConfig HogwildOptions::shm_config() const {
  return checks_config(name, [](const ShmConfig& c, std::span<float> initial) -> std::unique_ptr<SharedParameters> {
    return std::make_unique<HogwildParameters>(initial, c.threads, c.optimizer);
  });
}

}  // namespace ptrain
