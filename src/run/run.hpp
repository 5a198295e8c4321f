#pragma once
// The one entry point that trains: run(plan, world) for every strategy and
// backend. The CLI only parses, builds a plan, calls run and prints; a library
// user does the same with a plan built in code, and may bring their own model
// and data (RunInputs) instead of the plan's.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "data/data_registry.hpp"
#include "model/model_input.hpp"
#include "plan/run_plan.hpp"
#include "run/world.hpp"
#include "shm/async_sgd.hpp"
#include "run/trainer.hpp"

namespace ptrain {

// What a caller brings instead of the plan's model or data.
struct RunInputs {
  // Builds one replica; called once per worker (and for evaluation). Empty: the plan's model.
  std::function<std::unique_ptr<Model>(const ModelInput&)> model;
  std::optional<LoadedData> data;  // empty: the plan's data set
  // Continue from the newest intact checkpoint in this directory (run/resume.hpp);
  // the plan must be the checkpoint's but for how long it runs, logs and checkpoints.
  std::string resume;
};

// What a run tells its caller before training starts.
struct RunStart {
  std::string model;  // the model's name
  size_t parameters = 0;
  size_t train_samples = 0, test_samples = 0;
  Task task = Task::Classification;
  const World* world = nullptr;
  std::string resumed_from;  // the checkpoint's manifest ("": not resumed)
};

struct RunCallbacks {
  std::function<void(const RunStart&)> on_start;
  std::function<void(const Progress&)> on_progress;       // from worker 0, every few steps
  std::function<void(const EpochMetrics&)> on_epoch_end;  // after evaluation
  std::function<void(const StepDone&)> on_step;           // from worker 0, after every step
  std::function<void(const CheckpointDone&)> on_checkpoint;  // from worker 0, once it sees the commit
  // Shared-memory strategies: each check of the shared model's training loss
  // (the first on the initial model), with the updates and seconds so far.
  std::function<void(const LossCheck&)> on_loss_check;
  // Something the caller should hear of that does not stop the run (a damaged
  // checkpoint skipped on resume), as one line.
  std::function<void(const std::string&)> on_warning;
};

// Checks the plan (every problem at once, naming its fields), loads the data,
// builds the replicas and trains on `world`. On the reporting process the
// result holds the metrics; on other ranks only their own timing. Throws
// ptrain::Error for bad input before any work where it can be known then, and
// InterruptedError (core/run_failure.hpp) for a failed worker (naming it)
// unless run.max_restarts lets it restart from the last checkpoint. A run
// that diverged returns with `diverged` set, after run.on_diverge rollback
// rolled it back run.max_rollbacks times at most.
RunResult run(const RunPlan& plan, World& world, const RunCallbacks& callbacks = {}, const RunInputs& inputs = {});

// The plan as it ran: run.workers resolved from the world, run.backend too.
RunPlan resolved_plan(RunPlan plan, const World& world);

}  // namespace ptrain
