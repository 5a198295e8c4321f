#pragma once
// `ptrain eval`: a model ptrain train --save wrote, scored on a data set's
// test set (run/evaluate_saved.hpp): the loss and the task's figure on one line.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cli/plan_flags.hpp"

namespace ptrain {

struct EvalCommand {
  std::string model_path;
  std::string report_path;
  std::string samples_dir;  // --write-samples: the scored samples as .npy files there
  bool quiet = false;
  std::unique_ptr<PlanFlags> data_flags;  // --data-set and the test set's files
};

CLI::App* add_eval_command(CLI::App& app, EvalCommand& command);

// Throws ptrain::Error for bad input (naming flags).
int run_eval_command(EvalCommand& command, const std::vector<std::string>& command_line);

}  // namespace ptrain
