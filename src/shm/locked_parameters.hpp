#pragma once
// Lock-based AsyncSGD: a thread copies the parameters under a lock, computes
// its gradient without it, and applies the update under it again. With a
// read-write lock the copies share the lock and only updates exclude each
// other. The optimizer's state (velocity, moments) is shared like the
// parameters and stepped under the same lock. Staleness: updates applied
// between a thread's copy and its update.
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "optim/optimizer.hpp"
#include "shm/shared_parameters.hpp"

namespace ptrain {

class LockedParameters final : public SharedParameters {
 public:
  // shared_reads: the read-write lock (rwlock); else one mutex (mutex).
  LockedParameters(std::span<const float> initial, bool shared_reads, const OptimizerConfig& optimizer);

  uint64_t read(std::span<float> local, Backoff& backoff, ThreadCounters& counters) override;
  ApplyOutcome apply(std::span<const float> grad, uint64_t read_version, int thread, Backoff& backoff,
                     ThreadCounters& counters, std::span<float> replica, float lr_scale = 1) override;
  void snapshot(std::span<float> out) const override;
  uint64_t updates() const override;
  void save_state(StateWriter& out) const override;
  void load_state(StateReader& in) override;

 private:
  bool shared_reads_;
  float lr_;                              // the optimizer's, which each update scales
  std::unique_ptr<Optimizer> optimizer_;  // guarded by the lock
  std::mutex mutex_;
  std::shared_mutex rwlock_;
  std::vector<float> params_;
  uint64_t version_ = 0;  // updates applied; guarded by the lock
};

// seq: the single thread's own replica is the storage, so reads copy nothing.
class SequentialParameters final : public SharedParameters {
 public:
  SequentialParameters(std::span<float> replica, const OptimizerConfig& optimizer);

  uint64_t read(std::span<float> local, Backoff& backoff, ThreadCounters& counters) override;
  ApplyOutcome apply(std::span<const float> grad, uint64_t read_version, int thread, Backoff& backoff,
                     ThreadCounters& counters, std::span<float> replica, float lr_scale = 1) override;
  void snapshot(std::span<float> out) const override;
  uint64_t updates() const override { return version_; }
  void save_state(StateWriter& out) const override;
  void load_state(StateReader& in) override;

 private:
  std::span<float> params_;
  float lr_;  // the optimizer's, which each update scales
  std::unique_ptr<Optimizer> optimizer_;
  uint64_t version_ = 0;
};

}  // namespace ptrain
