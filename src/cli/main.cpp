// ptrain: train neural networks with many workers.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/bench_allreduce_command.hpp"
#include "cli/bench_compress_command.hpp"
#include "cli/eval_command.hpp"
#include "cli/plot_command.hpp"
#include "cli/simulate_command.hpp"
#include "cli/strict_options.hpp"
#include "cli/sweep_command.hpp"
#include "cli/terminal.hpp"
#include "cli/train_command.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "core/registry.hpp"
#include "core/temporary_files.hpp"
#include "run/build_info.hpp"

namespace {

// The subcommands that run in one process: under mpirun each rank would run
// its own copy, so they refuse before parsing anything else.
bool single_process_command(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string first = argv[1];
  const std::string second = argc > 2 ? argv[2] : "";
  return first == "shm" || first == "sweep" || first == "simulate" || first == "eval" ||
         (first == "bench" && second == "compress");
}

// "did you mean --workers?" for an unknown option or subcommand.
std::string suggestion(const CLI::App& app, const std::string& wrong) {
  std::vector<std::string> names;
  const CLI::App* scope = &app;
  for (const auto* sub : app.get_subcommands())  // the parsed one
    scope = sub;
  for (const auto* sub : scope->get_subcommands({})) names.push_back(sub->get_name());
  for (const auto* opt : scope->get_options())
    for (const auto& n : opt->get_lnames()) names.push_back("--" + n);
  std::vector<std::string_view> views(names.begin(), names.end());
  const auto near = ptrain::closest_name(wrong, views);
  return near ? " (did you mean " + *near + "?)" : "";
}

// What an option an older ptrain took is now called.
std::string renamed(const std::string& name) {
  if (name == "--pin") return " (it is --placement compact now)";
  if (name == "--no-pin") return " (it is --placement none now)";
  return "";
}

// What CLI11 refused, in one line: an unknown word names the closest option
// or subcommand, and an option of ptrain train that another command does not
// take says so (ptrain sweep --backup).
std::string parse_error_line(const CLI::App& app, const CLI::App& train, const CLI::ParseError& e) {
  const CLI::App* command = &app;  // the innermost one parsed
  std::string command_name = "ptrain";
  while (!command->get_subcommands().empty()) {
    command = command->get_subcommands().back();
    command_name += " " + command->get_name();
  }
  std::string unknown;  // the first option among the words left over, else the first word
  for (const auto* scope : {&app, command})
    for (const std::string& word : scope->remaining())
      if (unknown.empty() || (!unknown.starts_with("-") && word.starts_with("-"))) unknown = word;
  const std::string name = unknown.substr(0, unknown.find('='));
  if (name.starts_with("--") && command != &train && train.get_option_no_throw(name) != nullptr)
    return fmt::format("{}: {} has no such option (it is one of ptrain train's)", name, command_name);
  std::string message = e.what();
  if (message.starts_with(": ")) message.erase(0, 2);  // an option --help does not list: CLI11 gives no name
  if (!unknown.empty() && message.find(unknown) == std::string::npos) message += ": " + unknown;
  if (!renamed(name).empty()) return message + renamed(name);
  return message + (unknown.empty() ? "" : suggestion(app, name));
}

// One line, at most a few thousand characters, whatever the input held.
void print_error_line(const char* kind, const std::string& message) {
  ptrain::print_error(kind, ptrain::bounded_line(message));
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> command_line(argv, argv + argc);
  // A SIGINT or SIGTERM leaves no temporary file (a checkpoint or report half written).
  ptrain::remove_temporary_files_on_signals(/*announce=*/!ptrain::launched_by_mpi());
  // Under mpirun every rank initialises MPI first; an error on one rank ends the job.
  std::unique_ptr<ptrain::MpiRuntime> mpi;
  if (ptrain::launched_by_mpi()) {
    mpi = std::make_unique<ptrain::MpiRuntime>(&argc, &argv);
    // Every rank refuses alike, rank 0 says why, and all end through
    // MPI_Finalize: a rank that ended before rank 0 had spoken (without MPI)
    // made mpirun kill rank 0 before its line now and then.
    if (single_process_command(argc, argv)) {
      if (mpi->rank() == 0)
        print_error_line("error", fmt::format("ptrain {}{} runs in one process; start it without mpirun",
                                              argv[1], std::string(argv[1]) == "bench" ? " compress" : ""));
      return ptrain::kExitInput;
    }
    if (mpi->rank() == 0 && !mpi->transport().warning.empty())
      ptrain::print_warning(mpi->transport().warning);
  }
  CLI::App app{"ptrain: train neural networks with many workers (all-reduce, parameter servers, shared-memory async SGD)", "ptrain"};
  app.set_version_flag("--version", fmt::format("ptrain {} (commit {})", ptrain::build_info().version,
                                                ptrain::build_info().commit));
  app.require_subcommand(1);
  ptrain::TrainCommand train_command;
  auto* train = ptrain::add_train_command(app, train_command);
  ptrain::TrainCommand shm_command;
  auto* shm = ptrain::add_shm_command(app, shm_command);
  ptrain::EvalCommand eval_command;
  auto* eval = ptrain::add_eval_command(app, eval_command);
  ptrain::SweepOptions sweep_options;
  auto* sweep = ptrain::add_sweep_command(app, sweep_options);
  ptrain::SimulateOptions simulate_options;
  auto* simulate = ptrain::add_simulate_command(app, simulate_options);
  auto* bench = app.add_subcommand("bench", "Benchmarks of ptrain's parts");
  bench->require_subcommand(1);
  ptrain::BenchAllreduceOptions bench_allreduce_options;
  auto* bench_allreduce = ptrain::add_bench_allreduce_command(*bench, bench_allreduce_options);
  ptrain::BenchCompressOptions bench_compress_options;
  auto* bench_compress = ptrain::add_bench_compress_command(*bench, bench_compress_options);
  ptrain::PlotCommand plot_command;
  auto* plot = ptrain::add_plot_command(app, plot_command);
  ptrain::PlotCommand report_command;
  auto* report = ptrain::add_report_command(app, report_command);
  ptrain::check_every_option(app);
  // Whatever is refused before training is refused alike on every rank: rank 0 says it.
  const bool speaks = !mpi || mpi->rank() == 0;
  if (const auto empty = ptrain::empty_assignment(command_line)) {
    if (speaks) print_error_line("error", *empty + ": an empty value");
    return ptrain::kExitInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return speaks ? app.exit(e) : 0;
  } catch (const CLI::CallForAllHelp& e) {
    return speaks ? app.exit(e) : 0;
  } catch (const CLI::CallForVersion& e) {
    return speaks ? app.exit(e) : 0;
  } catch (const CLI::ParseError& e) {
    if (speaks) print_error_line("error", parse_error_line(app, *train, e));
    return ptrain::kExitInput;
  }
  try {
    if (train->parsed()) return ptrain::run_train_command(train_command, command_line);
    if (shm->parsed()) return ptrain::run_train_command(shm_command, command_line);
    if (sweep->parsed()) return ptrain::run_sweep_command(sweep_options);
    if (simulate->parsed()) return ptrain::run_simulate_command(simulate_options);
    if (eval->parsed()) return ptrain::run_eval_command(eval_command, command_line);
    if (bench_allreduce->parsed()) return ptrain::run_bench_allreduce_command(bench_allreduce_options);
    if (bench_compress->parsed()) return ptrain::run_bench_compress_command(bench_compress_options);
    if (plot->parsed()) return ptrain::run_plot_command(plot_command);
    if (report->parsed()) return ptrain::run_plot_command(report_command);
  } catch (const ptrain::PlanError& e) {
    // Every rank refused the same plan before talking to another: each ends
    // here (MPI_Finalize, no abort), and the launcher passes the status on.
    if (speaks) print_error_line("error", e.what());
    return ptrain::kExitInput;
  } catch (const ptrain::InterruptedError& e) {
    // A lost worker, a timeout, a checkpoint that could not be written: a
    // restart from the last checkpoint (--resume DIR) may finish the run.
    print_error_line("error", e.what());
    if (mpi) ptrain::MpiRuntime::abort_job(ptrain::kExitRetry);
    return ptrain::kExitRetry;
  } catch (const ptrain::Error& e) {
    print_error_line("error", e.what());
    if (mpi) ptrain::MpiRuntime::abort_job(ptrain::kExitInput);
    return ptrain::kExitInput;
  } catch (const std::exception& e) {
    print_error_line("internal error", e.what());
    if (mpi) ptrain::MpiRuntime::abort_job(ptrain::kExitInternal);
    return ptrain::kExitInternal;
  }
  return ptrain::kExitOk;
}
