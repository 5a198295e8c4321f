#pragma once
// `ptrain bench allreduce`: time, algorithm bandwidth and bus bandwidth of each
// all-reduce algorithm over a range of sizes (as nccl-tests reports them), with
// every result checked against the exact sum.
#include <CLI/CLI.hpp>

namespace ptrain {

struct BenchAllreduceOptions {
  std::string backend = "local";  // "mpi" under mpirun
  std::string algo = "all";
  int ranks = 0;  // 0: one per core
  int local_workers = 1;  // mpi: worker threads in each rank (comm/hierarchical_communicator.hpp)
  // auto: what training takes (gloo across hosts, mpi on one); "gloo" moves the all-reduces over Gloo
  // (comm/gloo_communicator.hpp)
  std::string transport = "auto";
  std::string sizes = "4KiB:64MiB";
  int iters = 20;
  int warmup = 3;
  std::string csv_path;
};

CLI::App* add_bench_allreduce_command(CLI::App& bench, BenchAllreduceOptions& options);
int run_bench_allreduce_command(BenchAllreduceOptions& options);

// "4KiB:256MiB" -> 4096, 16384, ... (x4 steps) up to the end; "1MiB" -> one size.
// Throws ptrain::Error naming the text when it is not a size or range.
std::vector<size_t> parse_byte_sizes(const std::string& text);

}  // namespace ptrain
