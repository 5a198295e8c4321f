#pragma once
// What the shared-memory strategies (--strategy seq, mutex, rwlock, hogwild or
// leashed) have in common: T threads of one process train one shared
// parameter vector (shm_config.hpp, shared_parameters.hpp), run by
// run_async_sgd rather than by the trainer's workers. Each strategy's options
// live beside the parameters they make (locked_parameters.hpp: seq, mutex,
// rwlock; hogwild_parameters.hpp; leashed_parameters.hpp): they declare
// `shared_memory` (PTRAIN_SHM_COMMON) and turn their fields into the
// ShmConfig the runner takes, their algorithm's name and the factory of its
// shared parameters included; the run's controls (threads, batch, epochs,
// seed, optimizer) are filled in by run(). A new one is its options struct and
// parameters (one file pair) and its line in the strategy registry.
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>

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
  ShmConfig checks_config(std::string_view algorithm, SharedParametersFactory make_parameters) const {
    ShmConfig c;
    c.algorithm = algorithm;
    c.make_parameters = std::move(make_parameters);
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

// The traits every shared-memory strategy's options declare (plan/strategy_registry.hpp).
#define PTRAIN_SHM_COMMON                                                                 \
  static constexpr bool shared_memory = true; /* run by run_async_sgd, not the trainer */ \
  static constexpr bool stops_on_time = true;                                             \
  static constexpr bool checkpoints = true; /* between rounds (shm/async_sgd.hpp) */

}  // namespace ptrain
