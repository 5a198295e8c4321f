#pragma once
// The CSV file of a sweep (run/sweep.hpp): one line per finished run, written
// as the run ends. Read back to resume a sweep and to summarise it.
//
// Columns: the run's grid cell (strategy, threads, batch, lr), repetition and
// seed; how it ended (stopped_by: target, epochs, time_limit, diverged or
// crashed; reached_target, seconds_to_target, final_train_loss,
// test_accuracy, diverged, crashed); its counters (train_seconds, updates,
// gradients, updates_per_s, the staleness mean, p50, p90, p99, max and whole
// histogram, failed swaps, dropped gradients, contended locks); the
// fingerprints of its final parameters (params_fnv1a64) and of its plan
// (plan_fnv1a64, which ties the row to the sweep that ran it); and, for a
// crashed run, its error (quoted). Fields a crashed run never measured are empty.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/run_plan.hpp"
#include "run/trainer.hpp"

namespace ptrain {

// A point of a sweep's grid.
struct SweepCell {
  std::string strategy;
  int threads = 1;
  size_t batch = 0;
  float lr = 0;
  auto operator<=>(const SweepCell&) const = default;
};

// One run of a sweep: its cell, repetition and the plan it runs (seed included).
struct SweepRun {
  SweepCell cell;
  int repetition = 0;
  RunPlan plan;
};

// What a line of the CSV says of its run: its key and how it ended.
struct SweepRow {
  SweepCell cell;
  int repetition = 0;
  uint64_t seed = 0;
  std::string stopped_by;
  std::optional<double> seconds_to_target;
  std::optional<double> final_loss;      // empty when crashed
  std::optional<double> staleness_mean;  // empty when crashed
  bool diverged = false;
  bool crashed = false;
  std::string error;  // why it crashed
  std::string plan_fingerprint;
};

// The first line of every sweep CSV, with its newline.
extern const std::string kSweepCsvHeader;

// The plan's fingerprint (FNV-1a, 64 bits, hex, of its JSON).
std::string plan_fingerprint(const RunPlan& plan);

// The line (with its newline) of a run that ended (target, epochs, time limit
// or diverged); `result` must hold the shared-memory section.
std::string sweep_csv_line(const SweepRun& run, const RunResult& result);
// The line of a run that crashed with `error`.
std::string sweep_csv_crash_line(const SweepRun& run, const std::string& error);

// One line (without its newline). Throws ptrain::Error "<where>: ..." when it
// is not a sweep row (field count, a number that is not one).
SweepRow parse_sweep_csv_line(const std::string& line, const std::string& where);

struct SweepCsvContents {
  std::vector<SweepRow> rows;
  std::vector<size_t> line_numbers;  // of each row, 1-based (the header is line 1)
  size_t intact_bytes = 0;           // the header and the whole rows
  bool torn = false;                 // a last line without its newline follows them
};

// A whole file. Throws ptrain::Error "<label>: ..." when its first line is not
// this version's header or a complete line is damaged. A last line cut short
// (no newline: a write that a kill interrupted) is reported as torn, unread.
SweepCsvContents parse_sweep_csv(const std::string& text, const std::string& label);

}  // namespace ptrain
