#pragma once
// The shared-memory strategies as a run chooses them (--strategy seq, mutex,
// rwlock, hogwild or leashed): T threads of one process train one shared
// parameter vector (shm_config.hpp, shared_parameters.hpp), run by
// run_async_sgd rather than by the trainer's workers. Each declares
// `shared_memory`, and turns its fields into the ShmConfig the runner takes;
// the run's controls (threads, batch, epochs, seed, optimizer) are filled in
// by run().
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "core/fields.hpp"
#include "core/problems.hpp"
#include "shm/shm_config.hpp"

namespace ptrain {

template <>
struct EnumText<BackoffKind> {
  static constexpr std::array<std::string_view, 3> names = {"none", "exp", "exp-jitter"};
};

// What every shared-memory strategy measures and stops on: the training loss
// of the shared model on a fixed sample, checked between rounds of updates.
struct ShmLossChecks {
  double target_loss = 0;      // stop once the training loss is at most this (0: no target)
  size_t check_every = 0;      // updates between checks (0: a tenth of an epoch)
  double diverge_above = 1e3;  // a loss above this (or not finite) ends the run as diverged
  size_t loss_sample = 10000;  // training samples the loss is measured on (0: all)

  template <class Self, class Visit>
  static void visit_checks(Self& s, Visit& visit) {
    visit("target_loss", s.target_loss, "stop when the training loss is at most this (0: no target)",
          Range::non_negative());
    visit("check_every", s.check_every, "updates between training-loss checks (0: a tenth of an epoch)", Range{});
    visit("diverge_above", s.diverge_above, "a training loss above this ends the run as diverged",
          Range::positive());
    visit("loss_sample", s.loss_sample,
          "measure the training loss on this fixed random sample of the training set (0: all of it)", Range{});
  }
  ShmConfig checks_config(ShmAlgorithm algorithm) const {
    ShmConfig c;
    c.algorithm = algorithm;
    c.target_loss = target_loss;
    c.check_every = check_every;
    c.diverge_above = diverge_above;
    return c;
  }
};

// After a contended lock or a failed swap (mutex, rwlock, leashed).
struct ShmBackoff {
  BackoffKind backoff = BackoffKind::None;
  double backoff_min = 1;     // microseconds
  double backoff_max = 1000;  // microseconds

  template <class Self, class Visit>
  static void visit_backoff(Self& s, Visit& visit) {
    visit("backoff", s.backoff, "after a contended lock or failed swap: none, exp or exp-jitter", Range{});
    visit("backoff_min", s.backoff_min, "backoff: the first wait, microseconds", Range::positive());
    visit("backoff_max", s.backoff_max, "backoff: the longest wait, microseconds", Range::positive());
  }
  void check_backoff(const std::string& prefix, Problems& problems) const {
    if (backoff_max < backoff_min)
      problems.add(prefix + "backoff_max", fmt::format("must be at least backoff_min ({} us; got {})", backoff_min,
                                                       backoff_max));
  }
  void apply_backoff(ShmConfig& c) const { c.backoff = {backoff, backoff_min, backoff_max}; }
};

#define PTRAIN_SHM_COMMON                                                                 \
  static constexpr bool shared_memory = true; /* run by run_async_sgd, not the trainer */ \
  static constexpr bool stops_on_time = true;                                             \
  static constexpr bool checkpoints = true; /* between rounds (shm/async_sgd.hpp) */

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
  ShmConfig shm_config() const { return checks_config(ShmAlgorithm::Seq); }
};

struct MutexOptions : ShmLossChecks, ShmBackoff {
  static constexpr std::string_view name = "mutex";
  static constexpr std::string_view summary =
      "shared memory: lock-based AsyncSGD, copy under a lock, compute without it, update under it";
  PTRAIN_SHM_COMMON
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit_backoff(s, visit);
    visit_checks(s, visit);
  }
  void check(int, const std::string& prefix, Problems& problems) const { check_backoff(prefix, problems); }
  ShmConfig shm_config() const {
    ShmConfig c = checks_config(ShmAlgorithm::Mutex);
    apply_backoff(c);
    return c;
  }
};

struct RwLockOptions : ShmLossChecks, ShmBackoff {
  static constexpr std::string_view name = "rwlock";
  static constexpr std::string_view summary =
      "shared memory: the same with a read-write lock, copies share it, updates take it alone";
  PTRAIN_SHM_COMMON
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit_backoff(s, visit);
    visit_checks(s, visit);
  }
  void check(int, const std::string& prefix, Problems& problems) const { check_backoff(prefix, problems); }
  ShmConfig shm_config() const {
    ShmConfig c = checks_config(ShmAlgorithm::RwLock);
    apply_backoff(c);
    return c;
  }
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
  ShmConfig shm_config() const { return checks_config(ShmAlgorithm::Hogwild); }
};

struct LeashedOptions : ShmLossChecks, ShmBackoff {
  static constexpr std::string_view name = "leashed";
  static constexpr std::string_view summary =
      "shared memory: Leashed-SGD, consistent and lock-free, versions published by compare-and-swap "
      "(Backstrom et al. 2021)";
  PTRAIN_SHM_COMMON
  int persistence = -1;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("persistence", s.persistence, "retries of a failed swap before the gradient is dropped (-1: no bound)",
          Range::at_least(-1));
    visit_backoff(s, visit);
    visit_checks(s, visit);
  }
  void check(int, const std::string& prefix, Problems& problems) const { check_backoff(prefix, problems); }
  ShmConfig shm_config() const {
    ShmConfig c = checks_config(ShmAlgorithm::Leashed);
    c.persistence = persistence;
    apply_backoff(c);
    return c;
  }
};

#undef PTRAIN_SHM_COMMON

}  // namespace ptrain
