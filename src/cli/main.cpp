// ptrain: train neural networks with many workers.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/bench_allreduce_command.hpp"
#include "cli/bench_compress_command.hpp"
#include "cli/shm_command.hpp"
#include "cli/simulate_command.hpp"
#include "cli/sweep_command.hpp"
#include "cli/train_command.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  // Under mpirun every rank initialises MPI first; an error on one rank ends the job.
  std::unique_ptr<ptrain::MpiRuntime> mpi;
  if (ptrain::launched_by_mpi()) mpi = std::make_unique<ptrain::MpiRuntime>(&argc, &argv);
  CLI::App app{"ptrain: train neural networks with many workers (all-reduce, parameter servers, shared-memory async SGD)", "ptrain"};
  app.require_subcommand(1);
  ptrain::TrainOptions train_options;
  auto* train = ptrain::add_train_command(app, train_options);
  ptrain::ShmCommandOptions shm_options;
  auto* shm = ptrain::add_shm_command(app, shm_options);
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "ptrain: error: {}\n", e.what());
    return 2;
  }
  try {
    if (train->parsed()) return ptrain::run_train_command(train_options);
    if (shm->parsed()) return ptrain::run_shm_command(shm_options);
    if (sweep->parsed()) return ptrain::run_sweep_command(sweep_options);
    if (simulate->parsed()) return ptrain::run_simulate_command(simulate_options);
    if (bench_allreduce->parsed()) return ptrain::run_bench_allreduce_command(bench_allreduce_options);
    if (bench_compress->parsed()) return ptrain::run_bench_compress_command(bench_compress_options);
  } catch (const ptrain::Error& e) {
    fmt::print(stderr, "ptrain: error: {}\n", e.what());
    if (mpi) ptrain::MpiRuntime::abort_job(1);
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ptrain: internal error: {}\n", e.what());
    if (mpi) ptrain::MpiRuntime::abort_job(1);
    return 1;
  }
  return 0;
}
