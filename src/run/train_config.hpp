#pragma once
// What the trainer takes from a plan: the strategy, the optimizer and codec it
// really uses, the run's controls, and the plan itself for checkpoints.
#include "plan/run_plan.hpp"
#include "run/trainer.hpp"

namespace ptrain {

// `workers`: the run's, as the world resolved them. The placer (run.placement
// on run.topology) is the caller's to set: loading a topology may fail, and
// run() checks it with the plan (run/run_placement.hpp).
TrainConfig train_config(const RunPlan& plan, int workers);

}  // namespace ptrain
