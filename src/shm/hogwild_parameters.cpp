#include "shm/hogwild_parameters.hpp"

#include <algorithm>
#include <cassert>

namespace ptrain {

static_assert(std::atomic_ref<float>::is_always_lock_free, "HOGWILD! needs lock-free float atomics");

HogwildParameters::HogwildParameters(std::span<const float> initial) : params_(initial.begin(), initial.end()) {}

uint64_t HogwildParameters::read(std::span<float> local, Backoff&, ThreadCounters&) {
  assert(local.size() == params_.size());
  const uint64_t version = completed_.load(std::memory_order_acquire);
  float* shared = params_.data();
  for (size_t i = 0, n = params_.size(); i < n; ++i)
    local[i] = std::atomic_ref<float>(shared[i]).load(std::memory_order_relaxed);
  return version;
}

ApplyOutcome HogwildParameters::apply(std::span<const float> grad, float lr, uint64_t read_version, Backoff&,
                                      ThreadCounters& counters, std::span<float> replica) {
  assert(grad.size() == params_.size() && (replica.empty() || replica.size() == params_.size()));
  const uint64_t now = completed_.load(std::memory_order_acquire);
  float* shared = params_.data();
  // Load, subtract, store: another thread's store in between is lost, as in HOGWILD!.
  // The replica takes each new value on the way: the next step's read, in the same pass.
  const bool refresh = !replica.empty();
  for (size_t i = 0, n = params_.size(); i < n; ++i) {
    std::atomic_ref<float> p(shared[i]);
    const float updated = p.load(std::memory_order_relaxed) - lr * grad[i];
    p.store(updated, std::memory_order_relaxed);
    if (refresh) replica[i] = updated;
  }
  const uint64_t after = completed_.fetch_add(1, std::memory_order_acq_rel) + 1;
  ++counters.applied;
  return {true, now - std::min(now, read_version), refresh, after};
}

void HogwildParameters::snapshot(std::span<float> out) const {
  std::copy(params_.begin(), params_.end(), out.begin());
}

}  // namespace ptrain
