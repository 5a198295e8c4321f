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
#include "shm/shm_strategies.hpp"

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
  std::vector<std::pair<std::string, std::string>> notes(const ThreadCounters& totals) const override;

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

struct SeqOptions : ShmLossChecks {
  static constexpr std::string_view name = "seq";
  static constexpr std::string_view summary =
      "shared memory: one thread trains the model alone, no synchronization (the baseline of the next four)";
  PTRAIN_SHM_COMMON
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit_checks(s, visit);
  }
  void check(int workers, const std::string&, Problems& problems) const {
    if (workers != 1) problems.add("run.workers", "must be 1: seq runs one thread (got " + std::to_string(workers) + ")");
  }
  ShmConfig shm_config() const;
};

// mutex and rwlock: the same fields, over one lock or a read-write lock.
struct LockOptions : ShmLossChecks, ShmBackoff {
  PTRAIN_SHM_COMMON
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit_backoff(s, visit);
    visit_checks(s, visit);
  }
  void check(int, const std::string& prefix, Problems& problems) const { check_backoff(prefix, problems); }
  // The config of `algorithm`, over a read-write lock when `shared_reads`.
  ShmConfig lock_config(std::string_view algorithm, bool shared_reads) const;
};

struct MutexOptions : LockOptions {
  static constexpr std::string_view name = "mutex";
  static constexpr std::string_view summary =
      "shared memory: lock-based AsyncSGD, copy under a lock, compute without it, update under it";
  ShmConfig shm_config() const;
};

struct RwLockOptions : LockOptions {
  static constexpr std::string_view name = "rwlock";
  static constexpr std::string_view summary =
      "shared memory: the same with a read-write lock, copies share it, updates take it alone";
  ShmConfig shm_config() const;
};

}  // namespace ptrain
