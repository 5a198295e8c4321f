#pragma once
// `ptrain train`: flags (or a plan file) to a run plan, run(), the summary and the report.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cli/plan_flags.hpp"

namespace ptrain {

struct TrainCommand {
  RunPlan defaults;                 // the plan the flags start from without --config
  bool shared_memory_only = false;  // ptrain shm: the shared-memory strategies only
  int threads = -1;                 // ptrain shm --threads: the same as --workers (-1: not given)
  std::string config_path;  // a plan file or a run report to start from
  std::string resume_dir;   // continue from the newest intact checkpoint there
  std::string report_path;
  bool print_plan = false;  // print the plan as JSON and stop
  bool quiet = false;
  std::unique_ptr<PlanFlags> flags;
};

CLI::App* add_train_command(CLI::App& app, TrainCommand& command);
// `ptrain shm`: the same command for the shared-memory strategies, with the
// defaults of the Leashed-SGD paper's experiments (MLP 784-3x128-10, plain
// SGD, leashed, 2 threads x batch 16, 10 epochs).
CLI::App* add_shm_command(CLI::App& app, TrainCommand& command);
// Those defaults as a plan (ptrain sweep starts from them too).
RunPlan shm_default_plan();

// Builds the plan, checks it (every problem at once, naming flags), trains,
// prints and writes the report. Throws ptrain::Error for bad input and
// InterruptedError for a run a restart from its checkpoint may finish; a run
// that diverged is reported (and its report written) and returns
// kExitDiverged (core/run_failure.hpp).
int run_train_command(TrainCommand& command, const std::vector<std::string>& command_line);

// Rewrites the plan fields named in an error message ("run.workers") as the
// flags they come from here ("--workers").
std::string with_flags(const std::string& message, const RunPlan& plan);

}  // namespace ptrain
