#pragma once
// Shard 0's part of a parameter-server strategy: when each worker may take a
// step, when an epoch is over, and (ps-backup) which gradients make a step.
// The shard asks it on every Begin and Claim, tells it of every push and
// departure, and asks again for the Begins it holds after any change. The
// strategies in sync/ implement it.
#include <optional>

#include "core/state_stream.hpp"
#include "ps/ps_protocol.hpp"
#include "ps/server_stats.hpp"

namespace ptrain {

class StepCoordinator {
 public:
  virtual ~StepCoordinator() = default;
  // The answer to `worker`'s Begin, or nullopt to hold it until something changes.
  virtual std::optional<PsDecision> begin(int worker) = 0;
  // ps-backup: whether `worker`'s gradient for `version` is among the first W - b.
  virtual bool claim(int /*worker*/, uint64_t /*version*/) { return true; }
  // A push from `worker` reached shard 0; one by one (ssp, async), `staleness`
  // is what shard 0 counts for it (0 for an aggregated step's).
  virtual void pushed(int /*worker*/, uint64_t /*staleness*/) {}
  // `worker` failed and left the run (async).
  virtual void left(int /*worker*/) {}
  // A worker diverged: end the run at the next point every worker can agree
  // on, as a spent time limit does.
  virtual void stop_run() = 0;
  // What the coordinator counted (dropped_late, max_clock_gap).
  virtual void add_stats(ServerStats& /*stats*/) const {}
  // Checkpoints: what it has counted so far, saved where a checkpoint is
  // taken (between steps of a lockstep schedule, or at an epoch's end) and
  // loaded before the first Begin of the resumed run, whose length may differ.
  virtual void save_state(StateWriter& out) const = 0;
  virtual void load_state(StateReader& in) = 0;
};

}  // namespace ptrain
