#pragma once
// run() for the shared-memory strategies (shm/shm_strategies.hpp): the plan's
// controls and the strategy's fields become a ShmConfig, run_async_sgd
// trains, and its result becomes the one RunResult every strategy returns.
#include "core/dataset.hpp"
#include "plan/run_plan.hpp"
#include "shm/shm_config.hpp"
#include "run/trainer.hpp"

namespace ptrain {

struct RunCallbacks;

// `shm` holds the strategy's own fields; `threads` is the run's resolved
// worker count. `config` says where checkpoints go (config.checkpoint) and
// which one the run goes on from (config.resume, in config.resume_dir), as
// for the trainer: the same store, one part for the whole process.
RunResult run_shared_memory(const RunPlan& plan, ShmConfig shm, int threads, const Dataset& train_set,
                            const Dataset& test_set, const ModelFactory& factory, const RunCallbacks& callbacks,
                            const TrainConfig& config);

}  // namespace ptrain
