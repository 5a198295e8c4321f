#pragma once
// HOGWILD! (Niu et al., 2011): no lock at all. Threads read and update the
// shared vector element by element, so a copy may mix several updates and two
// updates of one element may overwrite each other, as in the paper. Every
// access goes through std::atomic_ref<float> with relaxed order: on x86 that
// is the same plain load and store, but it is well-defined C++ and
// ThreadSanitizer accepts it. Each thread keeps its own optimizer state (as
// each process of PyTorch's HOGWILD! example has its own optimizer) and
// steps the shared vector a chunk at a time: the chunk is loaded into a
// small buffer, stepped by the optimizer's kernels, and stored back, so an
// update another thread makes to that chunk in between may be lost, as
// element-wise updates may be in the paper. The update refreshes the
// thread's replica in the same pass (its next read, without a second sweep
// over shared memory).
// Staleness: updates other threads completed between a thread's read and the
// start of its update.
#include <atomic>
#include <memory>
#include <vector>

#include "optim/optimizer.hpp"
#include "shm/shared_parameters.hpp"
#include "shm/shm_strategies.hpp"

namespace ptrain {

class HogwildParameters final : public SharedParameters {
 public:
  HogwildParameters(std::span<const float> initial, int threads, const OptimizerConfig& optimizer);

  // Floats a step loads, updates and stores at a time: small enough to stay
  // in L1 and keep the window for lost updates short.
  static constexpr size_t kChunk = 1024;

  uint64_t read(std::span<float> local, Backoff& backoff, ThreadCounters& counters) override;
  ApplyOutcome apply(std::span<const float> grad, uint64_t read_version, int thread, Backoff& backoff,
                     ThreadCounters& counters, std::span<float> replica, float lr_scale = 1) override;
  void snapshot(std::span<float> out) const override;
  uint64_t updates() const override { return completed_.load(std::memory_order_acquire); }
  void save_state(StateWriter& out) const override;
  void load_state(StateReader& in) override;

 private:
  struct ThreadState {
    std::vector<float> slots;  // state_slots() arrays of the parameters' size, one after the other
    int64_t steps = 0;
  };

  // Only touched through std::atomic_ref while threads run.
  std::vector<float> params_;
  std::unique_ptr<Optimizer> rule_;  // its kernels only: the state is each thread's
  std::vector<ThreadState> threads_;
  std::atomic<uint64_t> completed_{0};  // updates completed
};

struct HogwildOptions : ShmLossChecks {
  static constexpr std::string_view name = "hogwild";
  static constexpr std::string_view summary =
      "shared memory: HOGWILD!, no lock, relaxed element-wise reads and updates (Niu et al. 2011)";
  PTRAIN_SHM_COMMON
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit_checks(s, visit);
  }
  ShmConfig shm_config() const;
};

}  // namespace ptrain
