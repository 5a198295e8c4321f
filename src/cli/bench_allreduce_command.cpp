#include "cli/bench_allreduce_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/byte_size.hpp"
#include "cli/path_option.hpp"
#include "comm/allgather_values.hpp"
#include "comm/allreduce_algorithms.hpp"
#include "comm/gloo_communicator.hpp"
#include "comm/hierarchical_communicator.hpp"
#include "comm/local_group.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/worker_links.hpp"
#include "core/error.hpp"
#include "core/memory_size.hpp"
#include "core/stopwatch.hpp"
#include "core/thread_affinity.hpp"
#include "topology/placer.hpp"
#include "run/world.hpp"
#include "run/result_file.hpp"

namespace ptrain {

namespace {

size_t parse_one_size(const std::string& text, const std::string& whole) {
  if (auto bytes = parse_byte_size(text)) return *bytes;
  throw Error("--sizes '" + whole + "': expected sizes such as 4KiB, 1MiB or a range 4KiB:256MiB");
}

// Worker r's input: small integers, so the float sum is exact and checkable.
float input_value(int rank, size_t i) { return static_cast<float>((i + static_cast<size_t>(rank)) % 13); }

struct Measurement {
  double seconds = 0;  // per all-reduce, the slowest worker's mean
  bool correct = true;
};

// One worker's part: warm up, time `iters` all-reduces, check the result.
Measurement measure_rank(Communicator& comm, size_t floats, AllreduceAlgorithm algorithm, int iters,
                         int warmup) {
  std::vector<float> data(floats);
  auto fill = [&] {
    for (size_t i = 0; i < floats; ++i) data[i] = input_value(comm.rank(), i);
  };
  for (int i = 0; i < warmup; ++i) {
    fill();
    allreduce_with(comm, data, algorithm);
  }
  double total = 0;
  for (int i = 0; i < iters; ++i) {
    fill();
    comm.barrier();
    Stopwatch clock;
    allreduce_with(comm, data, algorithm);
    total += clock.seconds();
  }
  Measurement m;
  m.seconds = total / iters;
  for (size_t i = 0; i < floats && m.correct; ++i) {
    float expected = 0;
    for (int k = 0; k < comm.size(); ++k) expected += input_value(k, i);
    m.correct = data[i] == expected;
  }
  return m;
}

// The slowest rank's time, and whether every rank was right.
Measurement combine(const std::vector<Measurement>& all) {
  Measurement m;
  for (const auto& one : all) {
    m.seconds = std::max(m.seconds, one.seconds);
    m.correct = m.correct && one.correct;
  }
  return m;
}

// Runs `body(t)` on the group's threads, placed compact (thread t on the
// t-th core); rethrows the first error.
void on_threads(LocalGroup& group, const std::function<void(int)>& body) {
  static const Placer compact(Topology::load(""), Placement::Compact);
  std::string first_error;
  std::mutex error_mutex;
  std::vector<std::thread> threads;
  for (int t = 0; t < group.size(); ++t)
    threads.emplace_back([&, t] {
      try {
        compact.bind_current_thread("thread", t, t);
        body(t);
      } catch (const std::exception& e) {
        std::lock_guard lock(error_mutex);
        if (first_error.empty()) first_error = e.what();
        group.abort(e.what());
      }
    });
  for (auto& t : threads) t.join();
  if (!first_error.empty()) throw Error(first_error);
}

// Runs `body` on `ranks` placed threads of one local group.
void on_local_ranks(int ranks, const std::function<void(LocalCommunicator&)>& body) {
  auto group = std::make_shared<LocalGroup>(ranks);
  on_threads(*group, [&](int r) {
    LocalCommunicator comm(group, r);
    body(comm);
  });
}

Measurement measure_local(int ranks, size_t floats, AllreduceAlgorithm algorithm, int iters, int warmup) {
  std::vector<Measurement> all(static_cast<size_t>(ranks));
  on_local_ranks(ranks, [&](LocalCommunicator& comm) {
    all[static_cast<size_t>(comm.rank())] = measure_rank(comm, floats, algorithm, iters, warmup);
  });
  return combine(all);
}

// This rank's part: its threads' slowest time, and whether all were right.
Measurement measure_rank_or_threads(MpiCommunicator& comm, WorkerLinks& threads, size_t floats,
                                    AllreduceAlgorithm algorithm, int iters, int warmup) {
  if (threads.across.empty())
    return measure_rank(threads.gloo_ranks ? *threads.gloo_ranks : comm, floats, algorithm, iters, warmup);
  const int count = static_cast<int>(threads.across.size());
  auto group = std::make_shared<LocalGroup>(count, std::chrono::seconds(60), comm.rank() * count);
  std::vector<Measurement> mine(static_cast<size_t>(count));
  on_threads(*group, [&](int t) {
    const auto i = static_cast<size_t>(t);
    HierarchicalCommunicator worker(group, t, *threads.across[i], *threads.mesh[i]);
    mine[i] = measure_rank(worker, floats, algorithm, iters, warmup);
  });
  return combine(mine);
}

Measurement measure_mpi(MpiCommunicator& comm, WorkerLinks& threads, size_t floats, AllreduceAlgorithm algorithm,
                        int iters, int warmup) {
  return combine(allgather_value(comm, measure_rank_or_threads(comm, threads, floats, algorithm, iters, warmup)));
}

// STREAM's Copy kernel, on every rank at once: the rate at which each can
// move memory it does not share, counting bytes read plus bytes written (as
// STREAM does). A shared-memory all-reduce cannot beat it.
double copy_bytes_per_second(Communicator& comm, size_t bytes, int iters) {
  const size_t floats = bytes / sizeof(float);
  std::vector<float> from(floats, 1.0f), to(floats, 0.0f);
  std::memcpy(to.data(), from.data(), floats * sizeof(float));  // first touch
  comm.barrier();
  Stopwatch clock;
  for (int i = 0; i < iters; ++i) {
    from[static_cast<size_t>(i) % floats] = static_cast<float>(i);  // each pass copies fresh data
    std::memcpy(to.data(), from.data(), floats * sizeof(float));
  }
  const double seconds = clock.seconds();
  if (to[static_cast<size_t>(iters - 1) % floats] != static_cast<float>(iters - 1))
    throw Error("bench allreduce: the memory copy went wrong");
  return 2.0 * static_cast<double>(floats * sizeof(float)) * iters / seconds;
}

std::vector<double> measure_copy(MpiCommunicator* mpi, int ranks, size_t bytes, int iters) {
  if (mpi) return allgather_value(*mpi, copy_bytes_per_second(*mpi, bytes, iters));  // every rank's rate
  std::vector<double> rates(static_cast<size_t>(ranks));
  on_local_ranks(ranks, [&](LocalCommunicator& comm) {
    rates[static_cast<size_t>(comm.rank())] = copy_bytes_per_second(comm, bytes, iters);
  });
  return rates;
}

}  // namespace

std::vector<size_t> parse_byte_sizes(const std::string& text) {
  return parse_x4_range(
      text, [&](const std::string& one) { return parse_one_size(one, text); }, "--sizes");
}

CLI::App* add_bench_allreduce_command(CLI::App& bench, BenchAllreduceOptions& o) {
  auto* cmd = bench.add_subcommand("allreduce", "Time each all-reduce algorithm over a range of sizes");
  cmd->option_defaults()->always_capture_default();
  if (launched_by_mpi()) o.backend = "mpi";
  cmd->add_option("--backend", o.backend, "Communication backend: local (threads) or mpi (under mpirun)");
  cmd->add_option("--algo", o.algo, "native, ring, hd, tree, hierarchical or all");
  cmd->add_option("--ranks", o.ranks, "Workers (0: one per core; under mpirun, the ranks x --local-workers)");
  cmd->add_option("--local-workers", o.local_workers,
                  "Under mpirun: worker threads in each rank, thread t of rank r being worker r x T + t");
  cmd->add_option("--transport", o.transport,
                  "Under mpirun: what carries the all-reduces between ranks: mpi, gloo (Gloo's TCP connections) or "
                  "auto, what ptrain train takes (gloo when the ranks span several hosts, mpi on one)");
  cmd->add_option("--sizes", o.sizes, "Message sizes: one (1MiB) or a range in x4 steps (4KiB:256MiB)");
  cmd->add_option("--iters", o.iters, "Timed all-reduces per size");
  cmd->add_option("--warmup", o.warmup, "Untimed all-reduces per size first");
  cmd->add_option("--csv", o.csv_path, "Also write the results to this CSV file")
      ->check(non_empty_path());
  return cmd;
}

int run_bench_allreduce_command(BenchAllreduceOptions& o) {
  std::unique_ptr<MpiCommunicator> mpi;
  WorkerLinks threads;  // under mpirun: the threads' communicators, or the ranks' over Gloo
  if (o.transport != "auto" && o.transport != "mpi" && o.transport != "gloo")
    throw Error("--transport: unknown transport '" + o.transport + "' (choose auto, mpi or gloo)");
  // As training chooses (run/world.cpp), so that measuring the link first measures what training will use.
  const bool over_gloo = o.transport == "gloo" || (o.transport == "auto" && o.backend == "mpi" && gloo_by_default());
  if (o.local_workers < 1 || o.local_workers > 256)
    throw Error(fmt::format("--local-workers must be between 1 and 256 (got {})", o.local_workers));
  if (o.backend == "mpi") {
    if (!launched_by_mpi())
      throw Error("--backend mpi: start ptrain under mpirun (mpirun -np 4 ptrain bench ...)");
    if (o.local_workers > 1 && !MpiRuntime::threads_multiple())
      throw Error("--local-workers: worker threads in a rank call MPI at once, and this MPI library did not give "
                  "MPI_THREAD_MULTIPLE");
    mpi = std::make_unique<MpiCommunicator>();
    const int workers = mpi->size() * o.local_workers;
    if (o.ranks != 0 && o.ranks != workers)
      throw Error(fmt::format("--ranks {} does not match the {} workers mpirun started ({} ranks x {} threads)",
                              o.ranks, workers, mpi->size(), o.local_workers));
    o.ranks = workers;
    threads = make_worker_links(o.local_workers, over_gloo, std::chrono::seconds(60));
  } else if (o.backend != "local") {
    throw Error("--backend: unknown backend '" + o.backend + "' (choose local or mpi)");
  } else if (o.local_workers > 1) {
    throw Error("--local-workers: worker threads inside MPI ranks need mpirun (on threads alone: --ranks)");
  } else if (o.transport == "gloo" || o.transport == "mpi") {
    throw Error("--transport " + o.transport + ": carries MPI ranks' all-reduces, so it needs mpirun");
  }
  if (o.ranks == 0) o.ranks = static_cast<int>(std::max<size_t>(allowed_cpus().size(), 1));
  const bool speaker = !mpi || mpi->rank() == 0;
  if (o.ranks < 1) throw Error(fmt::format("--ranks must be at least 1 (got {})", o.ranks));
  if (o.iters < 1) throw Error(fmt::format("--iters must be at least 1 (got {})", o.iters));
  if (o.warmup < 0) throw Error(fmt::format("--warmup must be at least 0 (got {})", o.warmup));
  std::vector<AllreduceAlgorithm> algorithms;
  if (o.algo == "all")
    algorithms = {AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring, AllreduceAlgorithm::HalvingDoubling,
                  AllreduceAlgorithm::Tree, AllreduceAlgorithm::Hierarchical};
  else
    try {
      algorithms = {parse_allreduce_algorithm(o.algo)};
    } catch (const Error&) {  // its message names the plan's field, not --algo
      throw Error("--algo " + o.algo + ": unknown algorithm (choose native, ring, hd, tree, hierarchical or all)");
    }
  const std::vector<size_t> sizes = parse_byte_sizes(o.sizes);
  if (!mpi && o.ranks > kMaxThreads)
    throw Error(fmt::format("--ranks {}: more threads than the {} one process runs (more ranks run under mpirun)",
                            o.ranks, kMaxThreads));
  // Each rank holds its message, and the copy's two buffers of at least 64 MiB.
  const double per_rank = static_cast<double>(sizes.back()) +
                          2.0 * static_cast<double>(std::max<size_t>(sizes.back(), size_t{64} << 20));
  if (const auto why = beyond_memory(per_rank * (mpi ? 1 : o.ranks)))
    throw Error(fmt::format("--sizes {} on {} rank(s) need {}", o.sizes, mpi ? 1 : o.ranks, *why));

  // Checked before any measurement, written whole at the end (core/atomic_file.hpp).
  const bool csv = !o.csv_path.empty() && speaker;
  if (csv) check_writable(o.csv_path, "--csv");
  const std::string backend = over_gloo ? o.backend + "+gloo" : o.backend;  // "mpi+gloo"
  std::string csv_text = "backend,algorithm,ranks,bytes,seconds,algbw_gbps,busbw_gbps,correct,ceiling_pct\n";
  // nccl-tests: algbw = bytes / time; busbw = algbw * 2(n-1)/n, what each link carries.
  const double bus_factor = 2.0 * (o.ranks - 1) / o.ranks;
  if (speaker) {
    fmt::print("all-reduce, backend {}, {} ranks{}, {} iterations per size (time: mean of the slowest rank)\n",
               backend, o.ranks,
               o.local_workers > 1 ? fmt::format(" ({} x {} worker threads)", o.ranks / o.local_workers,
                                                 o.local_workers)
                                   : "",
               o.iters);
    if (const MpiTransport* transport = mpi ? mpi_transport_in_use() : nullptr)
      fmt::print("transport: {}{}\n", transport->description,
                 over_gloo ? "; all-reduces over gloo's TCP transport on " + gloo_interface_in_use() : "");
    if (over_gloo && !gloo_interface_warning().empty()) fmt::print("{}\n", gloo_interface_warning());
  }
  // How close an all-reduce comes to memory speed: it reads and writes each
  // byte at least once, so 2 x bytes / time over the slowest rank's copy rate.
  double slowest_copy = 0;
  {
    // Beyond the caches, whatever the sizes asked for.
    const size_t copy_bytes = std::max<size_t>(sizes.back(), size_t{64} << 20);
    const auto rates = measure_copy(mpi.get(), o.ranks, copy_bytes, std::max(o.iters, 5));
    if (speaker) {
      double total = 0, slowest = rates.empty() ? 0 : rates[0];
      for (double r : rates) total += r, slowest = std::min(slowest, r);
      slowest_copy = slowest;
      fmt::print(
          "memory copy ceiling (STREAM-like copy of {}, {} ranks at once, read+write bytes): {:.2f} GB/s "
          "in all, {:.2f} GB/s for the slowest rank\n",
          human_bytes(copy_bytes), o.ranks, total / 1e9, slowest / 1e9);
      csv_text += fmt::format("{},stream-copy,{},{},,{:.6f},,true,\n", backend, o.ranks, copy_bytes, total / 1e9);
    }
  }
  if (speaker)
    fmt::print("{:>12} {:>10} {:>12} {:>12} {:>12} {:>6} {:>10}\n", "algo", "size", "time (us)", "algbw GB/s",
               "busbw GB/s", "check", "ceiling %");
  bool all_correct = true;
  for (AllreduceAlgorithm algorithm : algorithms)
    for (size_t bytes : sizes) {
      const size_t floats = std::max<size_t>(bytes / sizeof(float), 1);
      const Measurement m = mpi ? measure_mpi(*mpi, threads, floats, algorithm, o.iters, o.warmup)
                                : measure_local(o.ranks, floats, algorithm, o.iters, o.warmup);
      all_correct &= m.correct;
      if (!speaker) continue;
      const double algbw = static_cast<double>(floats * sizeof(float)) / m.seconds / 1e9;
      const double ceiling = slowest_copy > 0 ? 100 * 2 * algbw * 1e9 / slowest_copy : 0;
      fmt::print("{:>12} {:>10} {:>12.1f} {:>12.3f} {:>12.3f} {:>6} {:>10.1f}\n", to_string(algorithm),
                 human_bytes(floats * sizeof(float)), m.seconds * 1e6, algbw, algbw * bus_factor,
                 m.correct ? "ok" : "WRONG", ceiling);
      csv_text += fmt::format("{},{},{},{},{:.9f},{:.6f},{:.6f},{},{:.2f}\n", backend, to_string(algorithm),
                              o.ranks, floats * sizeof(float), m.seconds, algbw, algbw * bus_factor, m.correct,
                              ceiling);
    }
  if (csv) write_text_file(o.csv_path, csv_text, "--csv");
  if (!all_correct)
    throw Error("bench allreduce: some results differ from the exact sum (marked WRONG above)");
  return 0;
}

}  // namespace ptrain
