#pragma once
// HOGWILD! (Niu et al., 2011): no lock at all. Threads read and update the
// shared vector element by element, so a copy may mix several updates and two
// updates of one element may overwrite each other, as in the paper. Every
// access goes through std::atomic_ref<float> with relaxed order: on x86 that
// is the same plain load and store, but it is well-defined C++ and
// ThreadSanitizer accepts it. The update refreshes the thread's replica in
// the same pass (its next read, without a second sweep over shared memory).
// Staleness: updates other threads completed between a thread's read and the
// start of its update.
#include <atomic>
#include <vector>

#include "shm/shared_parameters.hpp"

namespace ptrain {

class HogwildParameters final : public SharedParameters {
 public:
  explicit HogwildParameters(std::span<const float> initial);

  uint64_t read(std::span<float> local, Backoff& backoff, ThreadCounters& counters) override;
  ApplyOutcome apply(std::span<const float> grad, float lr, uint64_t read_version, Backoff& backoff,
                     ThreadCounters& counters, std::span<float> replica) override;
  void snapshot(std::span<float> out) const override;
  uint64_t updates() const override { return completed_.load(std::memory_order_acquire); }

 private:
  // Only touched through std::atomic_ref while threads run.
  std::vector<float> params_;
  std::atomic<uint64_t> completed_{0};  // updates completed
};

}  // namespace ptrain
