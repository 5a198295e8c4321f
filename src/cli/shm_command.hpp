#pragma once
// `ptrain shm`: shared-memory asynchronous SGD, threads training one model.
#include <CLI/CLI.hpp>

#include "cli/shm_options.hpp"

namespace ptrain {

struct ShmCommandOptions {
  ShmOptions common;
  std::string report_path;
};

CLI::App* add_shm_command(CLI::App& app, ShmCommandOptions& options);

// Checks, loads, runs, prints and writes the report. A diverged run is
// reported and exits with 3; bad input throws ptrain::Error.
int run_shm_command(ShmCommandOptions& options);

}  // namespace ptrain
