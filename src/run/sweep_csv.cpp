#include "run/sweep_csv.hpp"

#include <fmt/format.h>

#include <charconv>

#include "core/error.hpp"
#include "plan/plan_json.hpp"
#include "run/result_file.hpp"

namespace ptrain {

const std::string kSweepCsvHeader =
    "strategy,threads,batch,lr,repetition,seed,stopped_by,reached_target,seconds_to_target,final_train_loss,"
    "test_accuracy,diverged,crashed,train_seconds,updates,gradients,updates_per_s,staleness_mean,staleness_p50,"
    "staleness_p90,staleness_p99,staleness_max,failed_swaps,failed_swaps_per_update,dropped,contended_locks,"
    "staleness_histogram,params_fnv1a64,plan_fnv1a64,error,test_perplexity\n";

namespace {

// The columns parse_sweep_csv_line reads (the others are figures for the reader).
enum Column : size_t {
  kStrategy = 0,
  kThreads = 1,
  kBatch = 2,
  kLr = 3,
  kRepetition = 4,
  kSeed = 5,
  kStoppedBy = 6,
  kReachedTarget = 7,
  kSecondsToTarget = 8,
  kFinalLoss = 9,
  kDiverged = 11,
  kCrashed = 12,
  kStalenessMean = 17,
  kPlan = 28,
  kError = 29,
  kTestPerplexity = 30,  // a language model's figure (last, so that older readers of the columns before it still read them)
  kColumns = 31,
};

// RFC 4180: in quotes, quotes doubled; a line break becomes a space (one run, one line).
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += "\"\"";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out + "\"";
}

std::string prefix(const SweepRun& run) {
  const SweepCell& c = run.cell;
  return fmt::format("{},{},{},{},{},{}", c.strategy, c.threads, c.batch, c.lr, run.repetition, run.plan.run.seed);
}

// Splits on commas outside quotes; nullopt when a quote is left open or stray.
std::optional<std::vector<std::string>> split(const std::string& line) {
  std::vector<std::string> fields(1);
  bool in_quotes = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_quotes) {
      if (c != '"') fields.back() += c;
      else if (i + 1 < line.size() && line[i + 1] == '"') fields.back() += '"', ++i;
      else in_quotes = false;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c == '"' && fields.back().empty()) {
      in_quotes = true;
    } else if (c == '"') {
      return std::nullopt;
    } else {
      fields.back() += c;
    }
  }
  if (in_quotes) return std::nullopt;
  return fields;
}

template <typename T>
T number(const std::vector<std::string>& fields, size_t column, const std::string& where) {
  const std::string& text = fields[column];
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw Error(fmt::format("{}: column {} is '{}', not a number", where, column + 1, text));
  return value;
}

std::optional<double> optional_number(const std::vector<std::string>& fields, size_t column,
                                      const std::string& where) {
  if (fields[column].empty()) return std::nullopt;
  return number<double>(fields, column, where);
}

bool flag(const std::vector<std::string>& fields, size_t column, const std::string& where) {
  const std::string& text = fields[column];
  if (text != "0" && text != "1") throw Error(fmt::format("{}: column {} is '{}', not 0 or 1", where, column + 1, text));
  return text == "1";
}

}  // namespace

std::string plan_fingerprint(const RunPlan& plan) {
  const std::string json = plan_to_json(plan).dump();
  return bytes_fingerprint(std::as_bytes(std::span(json)));
}

std::string sweep_csv_line(const SweepRun& run, const RunResult& result) {
  if (!result.shared_memory) throw Error("sweep: a run without a shared-memory result (not a shared-memory strategy)");
  const AsyncSgdResult& r = *result.shared_memory;
  const double applied = static_cast<double>(r.totals.applied);
  std::string histogram;
  for (size_t s = 0; s < r.staleness.bins.size(); ++s)
    if (r.staleness.bins[s] > 0)
      histogram += fmt::format("{}{}:{}", histogram.empty() ? "" : ";", s, r.staleness.bins[s]);
  return fmt::format(
      "{},{},{},{},{:.6f},{:.4f},{},0,{:.4f},{},{},{:.1f},{:.4f},{},{},{},{},{},{:.4f},{},{},{},{},{},,{}\n",
      prefix(run), r.stopped_by == "time limit" ? "time_limit" : r.stopped_by, r.seconds_to_target ? 1 : 0,
      r.seconds_to_target ? fmt::format("{:.4f}", *r.seconds_to_target) : "", r.final_loss,
      result.epochs.empty() ? 0.0 : result.epochs.back().test_accuracy, r.diverged ? 1 : 0, r.train_seconds,
      r.totals.applied, r.gradients, r.train_seconds > 0 ? applied / r.train_seconds : 0.0, r.staleness.mean(),
      r.staleness.quantile(0.5), r.staleness.quantile(0.9), r.staleness.quantile(0.99), r.staleness.max(),
      r.totals.failed_swaps, applied > 0 ? static_cast<double>(r.totals.failed_swaps) / applied : 0.0,
      r.totals.dropped, r.totals.contended_locks, histogram, params_fingerprint(result.final_params),
      plan_fingerprint(run.plan),
      result.task == Task::LanguageModel && !result.epochs.empty()
          ? fmt::format("{:.4f}", result.epochs.back().test_perplexity)
          : std::string());
}

std::string sweep_csv_crash_line(const SweepRun& run, const std::string& error) {
  // Of what a run measures only the flags are known: not reached, not diverged, crashed.
  std::string line = prefix(run);
  for (size_t column = kStoppedBy; column < kColumns; ++column) {
    line += ',';
    switch (column) {
      case kStoppedBy: line += "crashed"; break;
      case kReachedTarget: line += '0'; break;
      case kDiverged: line += '0'; break;
      case kCrashed: line += '1'; break;
      case kPlan: line += plan_fingerprint(run.plan); break;
      case kError: line += quoted(error); break;
      default: break;
    }
  }
  return line + '\n';
}

SweepRow parse_sweep_csv_line(const std::string& line, const std::string& where) {
  const auto fields = split(line);
  if (!fields) throw Error(where + ": a quote is not closed or stray");
  if (fields->size() != kColumns)
    throw Error(fmt::format("{}: {} fields, a sweep row has {}", where, fields->size(), size_t{kColumns}));
  const auto& f = *fields;
  SweepRow row;
  row.cell.strategy = f[kStrategy];
  if (row.cell.strategy.empty()) throw Error(where + ": no strategy");
  row.cell.threads = number<int>(f, kThreads, where);
  row.cell.batch = number<size_t>(f, kBatch, where);
  row.cell.lr = number<float>(f, kLr, where);
  row.repetition = number<int>(f, kRepetition, where);
  row.seed = number<uint64_t>(f, kSeed, where);
  row.stopped_by = f[kStoppedBy];
  row.seconds_to_target = optional_number(f, kSecondsToTarget, where);
  row.final_loss = optional_number(f, kFinalLoss, where);
  row.staleness_mean = optional_number(f, kStalenessMean, where);
  row.diverged = flag(f, kDiverged, where);
  row.crashed = flag(f, kCrashed, where);
  row.error = f[kError];
  row.plan_fingerprint = f[kPlan];
  if (row.crashed != (row.stopped_by == "crashed"))
    throw Error(where + ": stopped_by and crashed disagree");
  return row;
}

SweepCsvContents parse_sweep_csv(const std::string& text, const std::string& label) {
  const std::string header = kSweepCsvHeader;
  if (text.compare(0, header.size(), header) != 0)
    throw Error(label + ": its first line is not the header of this version's sweep CSV (another file, or one "
                        "written by an older ptrain); name another file");
  SweepCsvContents contents;
  size_t at = header.size();
  for (size_t number = 2; at < text.size(); ++number) {
    const size_t end = text.find('\n', at);
    if (end == std::string::npos) {  // cut short while it was written
      contents.torn = true;
      break;
    }
    const std::string where = fmt::format("{}: line {}", label, number);
    contents.rows.push_back(parse_sweep_csv_line(text.substr(at, end - at), where + " is damaged"));
    contents.line_numbers.push_back(number);
    at = end + 1;
  }
  contents.intact_bytes = at;
  return contents;
}

}  // namespace ptrain
