#pragma once
// Shard 0's schedule for ssp and async: every gradient is applied as it
// arrives, and an epoch is W x steps_per_epoch gradients, handed out as
// tickets to whichever worker asks next, so fast workers do more of them.
//  - ssp (Stale Synchronous Parallel): a worker may not begin a step while it
//    is more than s steps ahead of the slowest worker still in the epoch.
//  - async: no bound.
// With --warmup-single N, only worker 0 trains until N gradients are in.
// Under the stale policy batch:K, a worker's step may take several tickets
// (base batches; step_batches in stale_policy.hpp) from the staleness of its
// last gradient: an epoch stays one pass over the data, and ssp's clocks count
// tickets, so that a worker given a larger batch is not held for it.
#include <optional>
#include <vector>

#include "core/count_histogram.hpp"
#include "ps/step_coordinator.hpp"
#include "sync/stale_policy.hpp"
#include "sync/time_budget.hpp"

namespace ptrain {

class BoundedStalenessCoordinator : public StepCoordinator {
 public:
  // `staleness`: ssp's s; nullopt for async.
  // `total_steps` (per worker) may cut the last epoch short (--max-steps).
  BoundedStalenessCoordinator(int workers, size_t steps_per_epoch, size_t total_steps,
                              std::optional<uint64_t> staleness, uint64_t warmup_single,
                              double time_limit_seconds = 0, StalePolicy stale_policy = {});
  std::optional<PsDecision> begin(int worker) override;
  void pushed(int worker, uint64_t staleness) override;
  void left(int worker) override;
  void add_stats(ServerStats& stats) const override {
    stats.max_clock_gap = std::max(stats.max_clock_gap, max_gap_);
    stats.step_batches.merge(step_batches_);
  }
  // Checkpoints are taken at epoch ends only (the workers' steps differ).
  void stop_run() override { stop_requested_ = true; }
  void save_state(StateWriter& out) const override;
  void load_state(StateReader& in) override;

 private:
  bool warming_up() const { return pushes_ < warmup_single_ && live_[0]; }

  uint64_t tickets_per_epoch_;
  uint64_t tickets_in_run_;  // W x total_steps
  uint64_t tickets_left_;   // in the run, for the epochs not begun yet and this one
  uint64_t epoch_tickets_;  // this epoch's
  std::optional<uint64_t> staleness_;
  uint64_t warmup_single_;
  uint64_t issued_ = 0;        // tickets this epoch
  uint64_t issued_total_ = 0;  // steps begun in the run: each becomes a push, or a Leave's void one
  uint64_t pushes_ = 0;
  uint64_t max_gap_ = 0;
  std::vector<uint64_t> clock_;  // tickets pushed this epoch (after the warm-up), per worker
  StalePolicy stale_policy_;
  std::vector<uint64_t> holding_;         // the tickets of each worker's step under way
  std::vector<uint64_t> last_staleness_;  // of each worker's last gradient, as shard 0 applied it
  CountHistogram step_batches_;           // steps begun, by their base batches
  std::vector<bool> live_, stopped_;
  TimeBudget budget_;
  bool over_ = false;  // the time is up, or a worker diverged: no more tickets in this run
  bool stop_requested_ = false;  // a worker diverged
  bool all_stopped() const;
};

}  // namespace ptrain
