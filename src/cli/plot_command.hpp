#pragma once
// `ptrain plot` and `ptrain report`: a figure, or a self-contained HTML page,
// from ptrain's files (reports, metrics, timelines, sweep, simulate and bench
// CSVs). Both are drawn by one Python program, ptrain_plot.py (Debian's
// python3-matplotlib), which these commands find and run with their
// arguments as given; its exit status is theirs. docs/plots.md.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ptrain {

struct PlotCommand {
  std::string mode;                // "plot" or "report": the program's first argument
  std::vector<std::string> args;   // the rest, passed through untouched
};

CLI::App* add_plot_command(CLI::App& app, PlotCommand& command);
CLI::App* add_report_command(CLI::App& app, PlotCommand& command);

// Replaces this process with the program (exec): returns only when it could
// not be started (a PlanError under mpirun, an Error when the program or
// Python is missing).
int run_plot_command(PlotCommand& command);

// ptrain_plot.py beside the executable (the build tree), else in the
// installed prefix's LIBEXECDIR/ptrain; empty when in neither.
std::string plot_program_path();

}  // namespace ptrain
