#pragma once
// A sweep: many runs (a grid of cells, each repeated), each finished run's
// line appended to a CSV file (run/sweep_csv.hpp) and flushed to disk at once,
// so a sweep that is killed loses at most the run in flight and leaves no
// partial or temporary file. Given a CSV it wrote, a sweep resumes: it checks
// that every line is a run of this sweep (its cell, repetition and plan
// fingerprint), drops a torn last line (the row a kill cut short: that run is
// run again), skips the runs it has, and runs the rest.
//
// A run that ends by diverging is a result; one that throws after it started
// training (RunCallbacks::on_start) crashed: its line says so, with the error,
// and the sweep goes on. An error before training (the data or the model
// cannot be loaded: every run would meet it) ends the sweep.
#include <functional>
#include <string>
#include <vector>

#include "run/run.hpp"
#include "run/sweep_csv.hpp"

namespace ptrain {

struct SweepCallbacks {
  // Said once before the first run: a resumed CSV, a torn line dropped.
  std::function<void(const std::string&)> on_note;
  // After each run, its line appended: `done` of `to_run` runs this time.
  std::function<void(size_t done, size_t to_run, const SweepRow&)> on_run_end;
};

// Trains one plan (default: make_world and run).
using SweepRunner = std::function<RunResult(const RunPlan&, const RunCallbacks&)>;

struct SweepResult {
  std::vector<SweepRow> rows;  // one per run, in the order of the runs given
  size_t resumed = 0;          // of them, found in the CSV
};

// Runs `runs` into the CSV at `path` (created, or resumed). `label` names the
// file in errors ("--csv sweep.csv"). Throws ptrain::Error for a file that is
// not this sweep's, a damaged line, a path that is a symlink, FIFO or device,
// and an error before a run's training.
SweepResult run_sweep(const std::vector<SweepRun>& runs, const std::string& path, const std::string& label,
                      const SweepCallbacks& callbacks = {}, const SweepRunner& runner = {});

// One cell's runs together.
struct SweepCellSummary {
  SweepCell cell;
  size_t runs = 0, reached_target = 0, diverged = 0, crashed = 0;
  double median_seconds_to_target = 0;  // infinite when most runs missed the target
};

// Per cell, in the order the cells first appear in `rows`.
std::vector<SweepCellSummary> summarize_sweep(const std::vector<SweepRow>& rows);

// The summary as CSV: strategy, threads, batch, lr, runs, reached_target,
// diverged, crashed, median_seconds_to_target (empty when infinite).
std::string sweep_summary_csv(const std::vector<SweepCellSummary>& cells);

}  // namespace ptrain
