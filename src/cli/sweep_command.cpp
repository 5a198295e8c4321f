#include "cli/sweep_command.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "cli/path_option.hpp"
#include "cli/train_command.hpp"
#include "core/error.hpp"
#include "run/run.hpp"
#include "run/world.hpp"
#include "run/sweep.hpp"
#include "run/result_file.hpp"

namespace ptrain {

namespace {

// A million runs of a second each is eleven days: far past a real sweep, and
// the list of runs stays small.
constexpr int kMaxRuns = 1000000;

// Each run stops at a training loss of 0.5 (or after its epochs).
void set_sweep_target(StrategyChoice& strategy) {
  std::visit(
      [](auto& s) {
        if constexpr (requires { s.target_loss; }) s.target_loss = 0.5;
      },
      strategy);
}

// The sweep's base plan: ptrain shm's, stopping at a training loss of 0.5 within 5 epochs.
RunPlan sweep_default_plan() {
  RunPlan plan = shm_default_plan();
  plan.run.epochs = 5;
  set_sweep_target(plan.strategy);
  return plan;
}

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, SweepOptions& o) {
  auto* cmd = app.add_subcommand("sweep",
                                 "A grid of shared-memory runs (strategy x threads x batch x lr x repetitions) "
                                 "into a CSV file, one row per run");
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("--strategies", o.strategies, "Comma-separated shared-memory strategies")
      ->delimiter(',')
      ->type_name("NAME,...")
      ->group("Sweep");
  // Counts are range-checked as text: CLI11 reads -1 into a size_t as 2^64 - 1.
  cmd->add_option("--threads", o.threads, "Comma-separated thread counts (seq: 1)")
      ->delimiter(',')
      ->check(CLI::Range(1, kMaxThreads))
      ->type_name("INT,...")
      ->group("Sweep");
  cmd->add_option("--batch", o.batches, "Comma-separated batch sizes")
      ->delimiter(',')
      ->check(CLI::Range(size_t{1}, size_t{1} << 40))
      ->type_name("INT,...")
      ->group("Sweep");
  cmd->add_option("--lr", o.lrs, "Comma-separated step sizes")->delimiter(',')->type_name("NUMBER,...")->group("Sweep");
  cmd->add_option("--repetitions", o.repetitions, "Runs of each point, with seeds seed, seed + 1, ...")
      ->check(CLI::Range(1, kMaxRuns))
      ->group("Sweep");
  cmd->add_option("--csv", o.csv_path,
                  "The CSV file: one row per run, appended and flushed to disk as the run ends; an existing one "
                  "of the same sweep is resumed (its runs are skipped)")
      ->required()
      ->check(non_empty_path())
      ->group("Sweep");
  cmd->add_option("--summary-csv", o.summary_csv_path,
                  "Also write one row per grid cell: runs, reached target, diverged, crashed, median time to "
                  "the target (written when the sweep ends)")
      ->check(non_empty_path())
      ->group("Sweep");
  // A sweep resumes by its CSV; its runs' checkpoints, metrics and timelines would mix in one file.
  o.flags = std::make_unique<PlanFlags>(
      *cmd, PlanFlags::Scope{sweep_default_plan(),
                             [](const StrategyChoice& s) { return shared_memory_config(s).has_value(); },
                             {"--strategy", "--workers", "--batch", "--lr", "--save", "--checkpoint-dir",
                              "--checkpoint-every", "--checkpoint-keep", "--metrics", "--timeline"}});
  return cmd;
}

int run_sweep_command(SweepOptions& o) {
  if (o.threads.empty() || o.batches.empty() || o.lrs.empty() || o.strategies.empty())
    throw Error("--strategies, --threads, --batch and --lr each need at least one value");
  // Every point's plan is built and checked before the first run, so a bad value fails at once.
  std::vector<SweepRun> grid;  // repetition 0 of each cell
  const RunPlan defaults = sweep_default_plan();
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
          set_sweep_target(plan.strategy);
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
          grid.push_back({{name, plan.run.workers, batch, lr}, 0, plan});
        }
    }
  }
  if (grid.size() * static_cast<size_t>(o.repetitions) > static_cast<size_t>(kMaxRuns))
    throw Error(fmt::format("--repetitions {}: {} grid points x {} repetitions is more than the {} runs a sweep "
                            "takes",
                            o.repetitions, grid.size(), o.repetitions, kMaxRuns));
  if (!o.summary_csv_path.empty()) check_writable(o.summary_csv_path, "--summary-csv");
  const RunPlan& first = grid.front().plan;
  const double target = std::visit(
      [](const auto& s) -> double {
        if constexpr (requires { s.target_loss; }) return s.target_loss;
        else return 0;
      },
      first.strategy);
  std::vector<SweepRun> runs;  // repetition r with seed + r
  for (const SweepRun& cell : grid)
    for (int rep = 0; rep < o.repetitions; ++rep) {
      SweepRun run = cell;
      run.repetition = rep;
      run.plan.run.seed = cell.plan.run.seed + static_cast<uint64_t>(rep);
      runs.push_back(std::move(run));
    }
  fmt::print("ptrain sweep: {} runs ({} grid points x {} repetitions), {} model, target loss {}, at most {} epoch(s)\n",
             runs.size(), grid.size(), o.repetitions, ModelRegistry::name_of(first.model), target, first.run.epochs);
  std::fflush(stdout);
  SweepCallbacks callbacks;
  callbacks.on_note = [](const std::string& note) {
    fmt::print("  {}\n", note);
    std::fflush(stdout);
  };
  callbacks.on_run_end = [](size_t done, size_t to_run, const SweepRow& r) {
    const SweepCell& c = r.cell;
    const std::string outcome =
        r.crashed ? "crashed: " + r.error
                  : fmt::format("{}, loss {:.4f}{}, staleness mean {:.2f}", r.stopped_by, r.final_loss.value_or(0),
                                r.seconds_to_target ? fmt::format(", target in {:.2f} s", *r.seconds_to_target) : "",
                                r.staleness_mean.value_or(0));
    fmt::print("  [{}/{}] {} threads {} batch {} lr {} rep {}: {}\n", done, to_run, c.strategy, c.threads, c.batch,
               c.lr, r.repetition, outcome);
    std::fflush(stdout);
  };
  const SweepResult result = run_sweep(runs, o.csv_path, "--csv " + o.csv_path, callbacks);
  const std::vector<SweepCellSummary> cells = summarize_sweep(result.rows);
  if (!o.summary_csv_path.empty()) write_text_file(o.summary_csv_path, sweep_summary_csv(cells), "--summary-csv");

  fmt::print("\nper grid point ({} repetition(s)): runs that reached loss {}, diverged, crashed; median time to it\n",
             o.repetitions, target);
  for (const auto& c : cells)
    fmt::print("  {:<8} {} thread(s) batch {:<4} lr {:<6}: {} of {} reached, {} diverged, {} crashed{}\n",
               c.cell.strategy, c.cell.threads, c.cell.batch, c.cell.lr, c.reached_target, c.runs, c.diverged,
               c.crashed,
               std::isfinite(c.median_seconds_to_target) ? fmt::format(", {:.2f} s", c.median_seconds_to_target)
                                                         : "");
  fmt::print("\nbest batch and step size (median time to loss {} over {} repetition(s))\n", target, o.repetitions);
  std::map<std::pair<std::string, int>, const SweepCellSummary*> best;
  for (const auto& c : cells) {
    const SweepCellSummary*& b = best[{c.cell.strategy, c.cell.threads}];
    if (!b || c.median_seconds_to_target < b->median_seconds_to_target) b = &c;
  }
  for (const auto& [key, b] : best)
    fmt::print("  {:<8} {} thread(s): {}\n", key.first, key.second,
               std::isfinite(b->median_seconds_to_target)
                   ? fmt::format("batch {}, lr {}: {:.2f} s", b->cell.batch, b->cell.lr, b->median_seconds_to_target)
                   : "target not reached");
  fmt::print("  csv          {}\n", o.csv_path);
  if (!o.summary_csv_path.empty()) fmt::print("  summary csv  {}\n", o.summary_csv_path);
  return 0;
}

}  // namespace ptrain
