#include "cli/plot_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "core/run_failure.hpp"

// From the installed bin directory to LIBEXECDIR/ptrain (CMakeLists.txt sets it).
#ifndef PTRAIN_PLOT_FROM_BINDIR
#define PTRAIN_PLOT_FROM_BINDIR "../libexec/ptrain"
#endif

namespace ptrain {

namespace {

constexpr const char* kProgram = "ptrain_plot.py";
constexpr const char* kDefaultPython = "/usr/bin/python3";

// Every word after the command goes to the program, --help included: its
// options are its own (argparse), so that they are described once.
CLI::App* add_passthrough(CLI::App& app, PlotCommand& command, const std::string& name,
                          const std::string& description) {
  command.mode = name;
  auto* cmd = app.add_subcommand(name, description);
  cmd->set_help_flag();
  cmd->prefix_command();
  cmd->allow_extras();
  cmd->callback([cmd, &command] { command.args = cmd->remaining(); });
  return cmd;
}

std::filesystem::path executable_directory() {
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path() : exe.parent_path();
}

}  // namespace

CLI::App* add_plot_command(CLI::App& app, PlotCommand& command) {
  return add_passthrough(app, command, "plot",
                         "Draw reports, metrics, timelines, sweep, simulate and bench CSVs into one figure "
                         "(-o OUT.png|.svg|.pdf; --help for its options; needs python3-matplotlib)");
}

CLI::App* add_report_command(CLI::App& app, PlotCommand& command) {
  return add_passthrough(app, command, "report",
                         "Write one self-contained HTML page about run reports: summary, differences, curves, "
                         "timelines, plans (-o PAGE.html; --help for its options; needs python3-matplotlib)");
}

std::string plot_program_path() {
  const auto dir = executable_directory();
  if (dir.empty()) return "";
  for (const auto& candidate : {dir / kProgram, dir / PTRAIN_PLOT_FROM_BINDIR / kProgram}) {
    std::error_code error;
    if (std::filesystem::is_regular_file(candidate, error)) return candidate.lexically_normal().string();
  }
  return "";
}

int run_plot_command(PlotCommand& command) {
  if (launched_by_mpi())
    throw PlanError(fmt::format("ptrain {} runs in one process; start it without mpirun", command.mode));
  const std::string program = plot_program_path();
  if (program.empty()) {
    const auto dir = executable_directory();
    throw Error(fmt::format("ptrain {} runs {}, which is neither beside {} nor in {}; build the ptrain target "
                            "again, or install ptrain again",
                            command.mode, kProgram, dir.string(),
                            (dir / PTRAIN_PLOT_FROM_BINDIR).lexically_normal().string()));
  }
  const char* from_env = std::getenv("PTRAIN_PYTHON");
  const std::string python = from_env && *from_env ? from_env : kDefaultPython;
  std::vector<std::string> words = {python, program, command.mode};
  words.insert(words.end(), command.args.begin(), command.args.end());
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execvp(python.c_str(), argv.data());  // a name without a slash is looked up in PATH
  const int error = errno;  // exec returned: Python is not there (or not runnable)
  throw Error(fmt::format("ptrain {} cannot run {} ({}): install python3-matplotlib, or name a Python that has it "
                          "in PTRAIN_PYTHON",
                          command.mode, python, std::strerror(error)));
}

}  // namespace ptrain
