#include "cli/sweep_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "cli/train_command.hpp"
#include "core/error.hpp"
#include "run/run.hpp"
#include "train/run_report.hpp"

namespace ptrain {

namespace {

struct GridPoint {
  std::string strategy;
  int threads;
  size_t batch;
  float lr;
};

const char* kCsvHeader =
    "strategy,threads,batch,lr,repetition,seed,stopped_by,reached_target,seconds_to_target,final_train_loss,"
    "test_accuracy,diverged,train_seconds,updates,gradients,updates_per_s,staleness_mean,staleness_p50,"
    "staleness_p90,staleness_p99,staleness_max,failed_swaps,failed_swaps_per_update,dropped,contended_locks,"
    "staleness_histogram\n";

std::string csv_row(const GridPoint& p, int repetition, uint64_t seed, const RunResult& result) {
  const AsyncSgdResult& r = *result.shared_memory;
  const double applied = static_cast<double>(r.totals.applied);
  std::string histogram;
  for (size_t s = 0; s < r.staleness.bins.size(); ++s)
    if (r.staleness.bins[s] > 0) histogram += fmt::format("{}{}:{}", histogram.empty() ? "" : ";", s, r.staleness.bins[s]);
  return fmt::format("{},{},{},{},{},{},{},{},{},{:.6f},{:.4f},{},{:.4f},{},{},{:.1f},{:.4f},{},{},{},{},{},{:.4f},{},{},{}\n",
                     p.strategy, p.threads, p.batch, p.lr, repetition, seed,
                     r.stopped_by == "time limit" ? "time_limit" : r.stopped_by, r.seconds_to_target ? 1 : 0,
                     r.seconds_to_target ? fmt::format("{:.4f}", *r.seconds_to_target) : "", r.final_loss,
                     result.epochs.empty() ? 0.0 : result.epochs.back().test_accuracy, r.diverged ? 1 : 0,
                     r.train_seconds, r.totals.applied, r.gradients,
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
  cmd->add_option("--strategies", o.strategies, "Comma-separated shared-memory strategies")
      ->delimiter(',')
      ->group("Sweep");
  cmd->add_option("--threads", o.threads, "Comma-separated thread counts (seq: 1)")->delimiter(',')->group("Sweep");
  cmd->add_option("--batch", o.batches, "Comma-separated batch sizes")->delimiter(',')->group("Sweep");
  cmd->add_option("--lr", o.lrs, "Comma-separated step sizes")->delimiter(',')->group("Sweep");
  cmd->add_option("--repetitions", o.repetitions, "Runs of each point, with seeds seed, seed + 1, ...")
      ->group("Sweep");
  cmd->add_option("--csv", o.csv_path, "The CSV file to write (written when the sweep ends)")
      ->required()
      ->group("Sweep");
  o.flags = std::make_unique<PlanFlags>(
      *cmd, std::vector<std::string>{"--strategy", "--workers", "--batch", "--lr", "--save"});
  return cmd;
}

int run_sweep_command(SweepOptions& o) {
  if (o.repetitions < 1) throw Error(fmt::format("--repetitions must be at least 1 (got {})", o.repetitions));
  if (o.threads.empty() || o.batches.empty() || o.lrs.empty() || o.strategies.empty())
    throw Error("--strategies, --threads, --batch and --lr each need at least one value");
  for (int threads : o.threads)
    if (threads < 1) throw Error(fmt::format("--threads must be at least 1 (got {})", threads));
  // Every point's plan is built and checked before the first run, so a bad value fails at once.
  std::vector<std::pair<GridPoint, RunPlan>> grid;
  // The sweep's base plan: ptrain shm's, stopping at a training loss of 0.5 within 5 epochs.
  RunPlan defaults = shm_default_plan();
  defaults.run.epochs = 5;
  for (const auto& name : o.strategies) {
    const auto made = StrategyRegistry::make(name);
    if (!made) throw Error("--strategies: " + StrategyRegistry::unknown("strategy", name));
    if (!shared_memory_config(*made))
      throw Error("--strategies: " + name + " is not a shared-memory strategy (ptrain sweep runs those only)");
    for (int threads : o.threads) {
      const bool seq = std::holds_alternative<SeqOptions>(*made);  // one thread: once per batch and step size
      if (seq && threads != o.threads.front()) continue;
      for (size_t batch : o.batches)
        for (float lr : o.lrs) {
          RunPlan plan = defaults;
          plan.strategy = *made;
          std::visit(
              [](auto& s) {
                if constexpr (requires { s.target_loss; }) s.target_loss = 0.5;
              },
              plan.strategy);
          Problems problems;
          plan = o.flags->apply(plan, problems, /*other_strategies_fields=*/true);
          problems.throw_if_any();
          plan.run.workers = seq ? 1 : threads;
          plan.run.batch = batch;
          std::visit([&](auto& opt) { opt.lr = lr; }, plan.optimizer);
          check_plan(plan).throw_if_any([&](const std::string& field) {
            if (field == "run.workers") return std::string("--threads");
            if (field == "run.batch") return std::string("--batch");
            if (field == "optimizer.lr") return std::string("--lr");
            return PlanFlags::flag_of(field, plan);
          });
          grid.push_back({{name, plan.run.workers, batch, lr}, plan});
        }
    }
  }
  check_writable(o.csv_path, "--csv");
  const RunPlan& first = grid.front().second;
  const double target = std::visit(
      [](const auto& s) -> double {
        if constexpr (requires { s.target_loss; }) return s.target_loss;
        else return 0;
      },
      first.strategy);
  const size_t runs = grid.size() * static_cast<size_t>(o.repetitions);
  fmt::print("ptrain sweep: {} runs ({} grid points x {} repetitions), {} model, target loss {}, at most {} epoch(s)\n",
             runs, grid.size(), o.repetitions, ModelRegistry::name_of(first.model), target, first.run.epochs);
  std::string csv = kCsvHeader;
  // Median time to the target per grid point (infinite when a repetition missed it).
  std::map<std::tuple<std::string, int, size_t, float>, std::vector<double>> times;
  size_t done = 0;
  for (const auto& [p, base] : grid)
    for (int rep = 0; rep < o.repetitions; ++rep) {
      RunPlan plan = base;
      plan.run.seed = base.run.seed + static_cast<uint64_t>(rep);
      World world = make_world(plan);
      const RunResult result = run(plan, world);
      const AsyncSgdResult& r = *result.shared_memory;
      csv += csv_row(p, rep, plan.run.seed, result);
      times[{p.strategy, p.threads, p.batch, p.lr}].push_back(
          r.seconds_to_target ? *r.seconds_to_target : std::numeric_limits<double>::infinity());
      fmt::print("  [{}/{}] {} threads {} batch {} lr {} rep {}: {}, loss {:.4f}{}, staleness mean {:.2f}\n", ++done,
                 runs, p.strategy, p.threads, p.batch, p.lr, rep, r.stopped_by, r.final_loss,
                 r.seconds_to_target ? fmt::format(", target in {:.2f} s", *r.seconds_to_target) : "",
                 r.staleness.mean());
      std::fflush(stdout);
    }
  write_text_file(o.csv_path, csv, "--csv");
  fmt::print("\nbest batch and step size (median time to loss {} over {} repetition(s))\n", target, o.repetitions);
  std::map<std::pair<std::string, int>, std::tuple<double, size_t, float>> best;
  for (const auto& [key, t] : times) {
    const auto& [strategy, threads, batch, lr] = key;
    const double m = median(t);
    auto it = best.find({strategy, threads});
    if (it == best.end() || m < std::get<0>(it->second)) best[{strategy, threads}] = {m, batch, lr};
  }
  for (const auto& [key, b] : best) {
    const auto [m, batch, lr] = b;
    fmt::print("  {:<8} {} thread(s): {}\n", key.first, key.second,
               std::isfinite(m) ? fmt::format("batch {}, lr {}: {:.2f} s", batch, lr, m) : "target not reached");
  }
  fmt::print("  csv          {}\n", o.csv_path);
  return 0;
}

}  // namespace ptrain
