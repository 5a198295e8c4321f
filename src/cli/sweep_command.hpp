#pragma once
// `ptrain sweep`: a grid of shared-memory runs (strategy x threads x batch x
// step size x repetitions), each a run plan trained by run(), one CSV row per
// run appended as it ends (run/sweep.hpp: a killed sweep resumes), the
// diverged and crashed runs per grid point, and the best batch and step size
// for each strategy and thread count.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cli/plan_flags.hpp"

namespace ptrain {

struct SweepOptions {
  std::vector<std::string> strategies = {"seq", "mutex", "rwlock", "hogwild", "leashed"};
  std::vector<int> threads = {1, 2};
  std::vector<size_t> batches = {16, 64};
  std::vector<float> lrs = {0.01f, 0.05f};
  int repetitions = 3;
  std::string csv_path;
  std::string summary_csv_path;
  std::unique_ptr<PlanFlags> flags;  // every other field of the plan
};

CLI::App* add_sweep_command(CLI::App& app, SweepOptions& options);
int run_sweep_command(SweepOptions& options);

}  // namespace ptrain
