#pragma once
// `ptrain train`: flags (or a plan file) to a run plan, run(), the summary and the report.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cli/plan_flags.hpp"

namespace ptrain {

struct TrainCommand {
  std::string config_path;  // a plan file or a run report to start from
  std::string report_path;
  bool print_plan = false;  // print the plan as JSON and stop
  bool quiet = false;
  std::unique_ptr<PlanFlags> flags;
};

CLI::App* add_train_command(CLI::App& app, TrainCommand& command);

// Builds the plan, checks it (every problem at once, naming flags), trains,
// prints and writes the report. Throws ptrain::Error for bad input.
int run_train_command(TrainCommand& command, const std::vector<std::string>& command_line);

// Rewrites the plan fields named in an error message ("run.workers") as the
// flags they come from here ("--workers").
std::string with_flags(const std::string& message, const RunPlan& plan);

}  // namespace ptrain
