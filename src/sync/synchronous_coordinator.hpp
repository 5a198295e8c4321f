#pragma once
// Shard 0's schedule for ps-sync and ps-backup. An update (a version) is the
// mean of W - b gradients, all computed from the same version: with b = 0
// (ps-sync) every worker's, in lockstep; with b > 0 (ps-backup, "N + spare
// replicas", Chen et al. 2016) the first W - b that are claimed for the open
// version, while the later ones are dropped and counted. An epoch is
// `steps_per_epoch` updates.
#include <vector>

#include "ps/step_coordinator.hpp"
#include "sync/time_budget.hpp"

namespace ptrain {

class SynchronousCoordinator : public StepCoordinator {
 public:
  // `total_steps` may cut the last epoch short (--max-steps).
  SynchronousCoordinator(int workers, int backup, size_t steps_per_epoch, size_t total_steps,
                         double time_limit_seconds = 0);
  std::optional<PsDecision> begin(int worker) override;
  bool claim(int worker, uint64_t version) override;
  void add_stats(ServerStats& stats) const override { stats.dropped_late += dropped_late_; }
  void stop_run() override { stop_requested_ = true; }
  void save_state(StateWriter& out) const override;
  void load_state(StateReader& in) override;

 private:
  int workers_, backup_;
  size_t steps_per_epoch_, total_steps_;
  uint64_t target_;         // the version that ends this epoch
  uint64_t closed_ = 0;     // versions whose gradients are all chosen (ps-backup)
  uint64_t accepted_ = 0;   // gradients chosen for the open version (ps-backup)
  uint64_t expected_ = 0;   // pushes every shard receives up to the open version (ps-backup)
  uint64_t dropped_late_ = 0;
  std::vector<uint64_t> begun_;           // ps-sync: steps each worker began
  std::vector<int64_t> last_accepted_;    // ps-backup: the version of each worker's last chosen gradient
  std::vector<bool> stopped_;             // told that this epoch is over
  TimeBudget budget_;
  bool over_ = false;  // the time is up, or a worker diverged: this epoch is cut short and is the last
  bool stop_requested_ = false;  // a worker diverged
  // A stop for `worker`; the epoch ends with the last one.
  PsDecision stop(size_t worker, uint64_t received);
};

}  // namespace ptrain
