#include "cli/sweep_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.hpp"
#include "model/torch/model_factory.hpp"
#include "train/run_report.hpp"

namespace ptrain {

namespace {

struct GridPoint {
  ShmAlgorithm algorithm;
  int threads;
  size_t batch;
  float lr;
};

// Seq runs one thread: it appears once per batch and step size, not once per thread count.
std::vector<GridPoint> grid_of(const SweepOptions& o, const std::vector<ShmAlgorithm>& algorithms) {
  std::vector<GridPoint> grid;
  for (auto algorithm : algorithms)
    for (int threads : o.threads) {
      if (algorithm == ShmAlgorithm::Seq && threads != o.threads.front()) continue;
      for (size_t batch : o.batches)
        for (float lr : o.lrs) grid.push_back({algorithm, algorithm == ShmAlgorithm::Seq ? 1 : threads, batch, lr});
    }
  return grid;
}

const char* kCsvHeader =
    "strategy,threads,batch,lr,repetition,seed,stopped_by,reached_target,seconds_to_target,final_train_loss,"
    "test_accuracy,diverged,train_seconds,updates,gradients,updates_per_s,staleness_mean,staleness_p50,"
    "staleness_p90,staleness_p99,staleness_max,failed_swaps,failed_swaps_per_update,dropped,contended_locks,"
    "staleness_histogram\n";

std::string csv_row(const GridPoint& p, int repetition, uint64_t seed, const ShmRun& run) {
  const AsyncSgdResult& r = run.result;
  const double applied = static_cast<double>(r.totals.applied);
  std::string histogram;
  for (size_t s = 0; s < r.staleness.bins.size(); ++s)
    if (r.staleness.bins[s] > 0) histogram += fmt::format("{}{}:{}", histogram.empty() ? "" : ";", s, r.staleness.bins[s]);
  return fmt::format("{},{},{},{},{},{},{},{},{},{:.6f},{:.4f},{},{:.4f},{},{},{:.1f},{:.4f},{},{},{},{},{},{:.4f},{},{},{}\n",
                     to_string(p.algorithm), p.threads, p.batch, p.lr, repetition, seed,
                     r.stopped_by == "time limit" ? "time_limit" : r.stopped_by, r.seconds_to_target ? 1 : 0,
                     r.seconds_to_target ? fmt::format("{:.4f}", *r.seconds_to_target) : "", r.final_loss,
                     run.test.accuracy, r.diverged ? 1 : 0, r.train_seconds, r.totals.applied, r.gradients,
                     r.train_seconds > 0 ? applied / r.train_seconds : 0.0, r.staleness.mean(),
                     r.staleness.quantile(0.5), r.staleness.quantile(0.9), r.staleness.quantile(0.99),
                     r.staleness.max(), r.totals.failed_swaps,
                     applied > 0 ? static_cast<double>(r.totals.failed_swaps) / applied : 0.0, r.totals.dropped,
                     r.totals.contended_locks, histogram);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, SweepOptions& o) {
  auto* cmd = app.add_subcommand("sweep",
                                 "A grid of shared-memory runs (strategy x threads x batch x lr x repetitions) "
                                 "into a CSV file, one row per run");
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("--strategies", o.strategies, "Comma-separated: seq, mutex, rwlock, hogwild, leashed")
      ->delimiter(',');
  cmd->add_option("--threads", o.threads, "Comma-separated thread counts")->delimiter(',');
  cmd->add_option("--batch", o.batches, "Comma-separated batch sizes")->delimiter(',');
  cmd->add_option("--lr", o.lrs, "Comma-separated step sizes")->delimiter(',');
  cmd->add_option("--repetitions", o.repetitions, "Runs of each point, with seeds seed, seed + 1, ...");
  cmd->add_option("--csv", o.csv_path, "The CSV file to write (written when the sweep ends)")->required();
  add_shm_options(*cmd, o.common);
  o.common.shm.target_loss = 0.5;
  o.common.shm.epochs = 5;
  return cmd;
}

int run_sweep_command(SweepOptions& o) {
  check_shm_options(o.common);
  std::vector<ShmAlgorithm> algorithms;
  for (const auto& name : o.strategies) algorithms.push_back(parse_shm_algorithm(name));
  if (o.repetitions < 1) throw Error(fmt::format("--repetitions must be at least 1 (got {})", o.repetitions));
  if (o.threads.empty() || o.batches.empty() || o.lrs.empty() || algorithms.empty())
    throw Error("--strategies, --threads, --batch and --lr each need at least one value");
  const std::vector<GridPoint> grid = grid_of(o, algorithms);
  auto config_of = [&](const GridPoint& p, int repetition) {
    ShmConfig c = o.common.shm;
    c.algorithm = p.algorithm, c.threads = p.threads, c.batch = p.batch, c.optimizer.lr = p.lr;
    if (c.algorithm != ShmAlgorithm::Leashed) c.persistence = -1;  // --persistence concerns the leashed points only
    c.seed = o.common.shm.seed + static_cast<uint64_t>(repetition);
    return c;
  };
  // Every point is checked before the first run, so a bad value fails at once.
  for (const auto& p : grid) validate_shm_config(config_of(p, 0));
  check_writable(o.csv_path, "--csv");
  set_compute_threads(1);
  const ShmSetup setup = load_shm_setup(o.common);
  const size_t runs = grid.size() * static_cast<size_t>(o.repetitions);
  fmt::print("ptrain sweep: {} runs ({} grid points x {} repetitions), {} model, target loss {}, at most {} epoch(s)\n",
             runs, grid.size(), o.repetitions, o.common.model.name, o.common.shm.target_loss, o.common.shm.epochs);
  std::string csv = kCsvHeader;
  // Median time to the target per grid point (infinite when a repetition missed it).
  std::map<std::tuple<int, int, size_t, float>, std::vector<double>> times;
  size_t done = 0;
  for (const auto& p : grid)
    for (int rep = 0; rep < o.repetitions; ++rep) {
      const ShmConfig c = config_of(p, rep);
      const ShmRun run = run_shm(c, setup);
      csv += csv_row(p, rep, c.seed, run);
      const auto& r = run.result;
      times[{static_cast<int>(p.algorithm), p.threads, p.batch, p.lr}].push_back(
          r.seconds_to_target ? *r.seconds_to_target : std::numeric_limits<double>::infinity());
      fmt::print("  [{}/{}] {} threads {} batch {} lr {} rep {}: {}, loss {:.4f}{}, staleness mean {:.2f}\n", ++done,
                 runs, to_string(p.algorithm), p.threads, p.batch, p.lr, rep, r.stopped_by, r.final_loss,
                 r.seconds_to_target ? fmt::format(", target in {:.2f} s", *r.seconds_to_target) : "",
                 r.staleness.mean());
      std::fflush(stdout);
    }
  write_text_file(o.csv_path, csv, "--csv");
  fmt::print("\nbest batch and step size (median time to loss {} over {} repetition(s))\n",
             o.common.shm.target_loss, o.repetitions);
  std::map<std::pair<int, int>, std::tuple<double, size_t, float>> best;
  for (const auto& [key, t] : times) {
    const auto [algorithm, threads, batch, lr] = key;
    const double m = median(t);
    auto it = best.find({algorithm, threads});
    if (it == best.end() || m < std::get<0>(it->second)) best[{algorithm, threads}] = {m, batch, lr};
  }
  for (const auto& [key, b] : best) {
    const auto [m, batch, lr] = b;
    fmt::print("  {:<8} {} thread(s): {}\n", to_string(static_cast<ShmAlgorithm>(key.first)), key.second,
               std::isfinite(m) ? fmt::format("batch {}, lr {}: {:.2f} s", batch, lr, m) : "target not reached");
  }
  fmt::print("  csv          {}\n", o.csv_path);
  return 0;
}

}  // namespace ptrain
