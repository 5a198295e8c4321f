#include "run/sweep.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/append_file.hpp"
#include "core/error.hpp"

namespace ptrain {

namespace {

std::string describe(const SweepCell& c, int repetition) {
  return fmt::format("{}, {} thread(s), batch {}, lr {}, repetition {}", c.strategy, c.threads, c.batch, c.lr,
                     repetition);
}

RunResult run_in_a_world(const RunPlan& plan, const RunCallbacks& callbacks) {
  World world = make_world(plan);
  return run(plan, world, callbacks);
}

bool absent(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) != 0 && errno == ENOENT;
}

// Opens the CSV, or creates it holding the header.
AppendFile open_csv(const std::string& path, const std::string& label) {
  if (absent(path)) return AppendFile::create(path, kSweepCsvHeader, label);
  return AppendFile::open_existing(path, label);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

SweepResult run_sweep(const std::vector<SweepRun>& runs, const std::string& path, const std::string& label,
                      const SweepCallbacks& callbacks, const SweepRunner& given_runner) {
  const SweepRunner runner = given_runner ? given_runner : SweepRunner(run_in_a_world);
  std::map<std::pair<SweepCell, int>, size_t> index_of;
  for (size_t i = 0; i < runs.size(); ++i)
    if (!index_of.emplace(std::pair(runs[i].cell, runs[i].repetition), i).second)
      throw Error(fmt::format("sweep: {} is in the grid twice", describe(runs[i].cell, runs[i].repetition)));

  const bool created = absent(path);
  AppendFile csv = open_csv(path, label);
  SweepCsvContents contents = parse_sweep_csv(csv.read_all(), label);
  if (contents.torn) {
    csv.truncate(contents.intact_bytes);
    if (callbacks.on_note)
      callbacks.on_note(label + ": dropped a torn last line (a row cut short when the sweep was stopped); that run "
                                "runs again");
  }
  std::vector<std::optional<SweepRow>> rows(runs.size());
  std::vector<size_t> line_of(runs.size(), 0);
  for (size_t k = 0; k < contents.rows.size(); ++k) {
    SweepRow& row = contents.rows[k];
    const std::string where = fmt::format("{}: line {}", label, contents.line_numbers[k]);
    const auto it = index_of.find({row.cell, row.repetition});
    if (it == index_of.end())
      throw Error(fmt::format("{}: {} is not a run of this sweep's grid (a CSV of another sweep: name another "
                              "file, or give the sweep the grid it was written with)",
                              where, describe(row.cell, row.repetition)));
    const SweepRun& run = runs[it->second];
    if (row.seed != run.plan.run.seed || row.plan_fingerprint != plan_fingerprint(run.plan))
      throw Error(fmt::format("{}: {} ran with another plan than this sweep's (another seed, model, data, epochs, "
                              "target or strategy option): name another file, or give the sweep the options it "
                              "was written with",
                              where, describe(row.cell, row.repetition)));
    if (rows[it->second])
      throw Error(fmt::format("{}: {} is there twice (line {} too)", where, describe(row.cell, row.repetition),
                              line_of[it->second]));
    line_of[it->second] = contents.line_numbers[k];
    rows[it->second] = std::move(row);
  }
  SweepResult result;
  result.resumed = contents.rows.size();
  const size_t to_run = runs.size() - result.resumed;
  if (result.resumed > 0 && callbacks.on_note) {
    size_t diverged = 0, crashed = 0;
    for (const auto& row : rows)
      if (row) diverged += row->diverged, crashed += row->crashed;
    callbacks.on_note(fmt::format("{}: resuming: {} of {} runs are in it ({} diverged, {} crashed); running the "
                                  "other {}",
                                  label, result.resumed, runs.size(), diverged, crashed, to_run));
  }

  size_t done = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (rows[i]) continue;
    const SweepRun& run = runs[i];
    bool training = false;
    RunCallbacks run_callbacks;
    run_callbacks.on_start = [&](const RunStart&) { training = true; };
    std::string line;
    try {
      line = sweep_csv_line(run, runner(run.plan, run_callbacks));
    } catch (const std::exception& e) {
      if (!training) {
        // Bad input (the data, the model): a sweep refused before its first row leaves no file of its own.
        if (created && done == 0) ::unlink(path.c_str());
        throw Error(fmt::format("sweep: {}: {}", describe(run.cell, run.repetition), e.what()));
      }
      line = sweep_csv_crash_line(run, e.what());
    }
    csv.append(line);
    rows[i] = parse_sweep_csv_line(line.substr(0, line.size() - 1), label);
    ++done;
    if (callbacks.on_run_end) callbacks.on_run_end(done, to_run, *rows[i]);
  }
  for (auto& row : rows) result.rows.push_back(std::move(*row));
  return result;
}

std::vector<SweepCellSummary> summarize_sweep(const std::vector<SweepRow>& rows) {
  std::vector<SweepCellSummary> cells;
  std::map<SweepCell, size_t> index;
  std::vector<std::vector<double>> times;
  for (const SweepRow& row : rows) {
    auto [it, fresh] = index.emplace(row.cell, cells.size());
    if (fresh) {
      cells.push_back({row.cell});
      times.emplace_back();
    }
    SweepCellSummary& c = cells[it->second];
    ++c.runs;
    c.reached_target += row.seconds_to_target.has_value();
    c.diverged += row.diverged;
    c.crashed += row.crashed;
    times[it->second].push_back(row.seconds_to_target.value_or(std::numeric_limits<double>::infinity()));
  }
  for (size_t i = 0; i < cells.size(); ++i) cells[i].median_seconds_to_target = median(times[i]);
  return cells;
}

std::string sweep_summary_csv(const std::vector<SweepCellSummary>& cells) {
  std::string csv = "strategy,threads,batch,lr,runs,reached_target,diverged,crashed,median_seconds_to_target\n";
  for (const auto& c : cells)
    csv += fmt::format("{},{},{},{},{},{},{},{},{}\n", c.cell.strategy, c.cell.threads, c.cell.batch, c.cell.lr,
                       c.runs, c.reached_target, c.diverged, c.crashed,
                       std::isfinite(c.median_seconds_to_target)
                           ? fmt::format("{:.4f}", c.median_seconds_to_target)
                           : "");
  return csv;
}

}  // namespace ptrain
