#include "cli/bench_compress_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <optional>
#include <sstream>
#include <utility>

#include "cli/byte_size.hpp"
#include "cli/path_option.hpp"
#include "compress/codec_registry.hpp"
#include "compress/codec.hpp"
#include "core/error.hpp"
#include "core/memory_size.hpp"
#include "core/rng.hpp"
#include "core/stopwatch.hpp"
#include "run/result_file.hpp"

namespace ptrain {

namespace {

constexpr uint64_t kGradientSeed = 20240601;
// Every registered codec that compresses.
std::vector<std::string> bench_codecs() {
  std::vector<std::string> names;
  for (auto name : CodecRegistry::names())
    if (compresses(*CodecRegistry::make(name))) names.emplace_back(name);
  return names;
}

size_t parse_one_count(const std::string& text, const std::string& whole) {
  // Counts take the byte sizes' binary suffixes, without a B: 1M = 2^20 elements.
  const bool byte_unit = !text.empty() && text.back() == 'B';
  const auto count = byte_unit ? std::nullopt : parse_byte_size(text);
  if (!count)
    throw Error("--sizes '" + whole + "': expected element counts such as 65536, 1M or a range 1M:64M");
  // The sparse codecs index their range with 32 bits.
  if (*count > std::numeric_limits<uint32_t>::max())
    throw Error(fmt::format("--sizes '{}': {} elements, more than the codecs' limit of {}", whole, *count,
                            std::numeric_limits<uint32_t>::max()));
  return *count;
}

// Standard normal deviates (Box-Muller), the same with every standard library.
std::vector<float> normal_gradient(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> g(n);
  for (size_t i = 0; i + 1 < n; i += 2) {
    const double u1 = 1.0 - static_cast<double>(rng.uniform());  // (0, 1]: log is finite
    const double u2 = static_cast<double>(rng.uniform());
    const double radius = std::sqrt(-2.0 * std::log(u1)), angle = 2.0 * std::numbers::pi * u2;
    g[i] = static_cast<float>(radius * std::cos(angle));
    g[i + 1] = static_cast<float>(radius * std::sin(angle));
  }
  if (n % 2 == 1) g[n - 1] = static_cast<float>(rng.uniform()) - 0.5f;
  return g;
}

std::string count_text(size_t n) {
  const std::string bytes = human_bytes(n);  // 1MiB, 64MiB, 1000B: drop the unit's "iB" / "B"
  if (bytes.ends_with("iB")) return bytes.substr(0, bytes.size() - 2);
  return bytes.substr(0, bytes.size() - 1);
}

std::vector<std::string> parse_codecs(const std::string& text) {
  const std::vector<std::string> all = bench_codecs();
  if (text == "all") return all;
  std::vector<std::string> codecs;
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (std::find(all.begin(), all.end(), name) == all.end())
      throw Error("--codecs: " + CodecRegistry::unknown("codec", name) + " or all");
    if (std::find(codecs.begin(), codecs.end(), name) == codecs.end()) codecs.push_back(name);
  }
  if (codecs.empty()) throw Error("--codecs: no codec named (choose " + CodecRegistry::listed() + " or all)");
  return codecs;
}

struct Row {
  std::string codec;
  size_t count = 0;
  double encode_s = 0;  // per call
  double decode_s = 0;  // per call; 0: not measured
  size_t wire_bytes = 0;
  std::string note;
};

double gbps(size_t count, double seconds) {
  return static_cast<double>(count * sizeof(float)) / seconds / 1e9;
}

Row measure_codec(const std::string& name, const std::vector<std::vector<float>>& grads, int iters,
                  int warmup) {
  const size_t n = grads[0].size();
  CodecConfig config;
  config.choice = *CodecRegistry::make(name);
  CodecRange range;
  range.count = n;
  const auto codec = make_codec(config, range, 0);
  size_t step = 0;
  // One message buffer reused from call to call, as the trainer's reducer keeps one per bucket.
  Encoded e;
  auto encode = [&] {
    const std::vector<float>& g = grads[step % grads.size()];
    const StepInfo info{.step = step, .epoch = 0, .workers = 1};
    ++step;
    codec->encode_into(g, info, e);
  };
  for (int i = 0; i < warmup; ++i) encode();
  const CodecStats before = codec->stats();
  Stopwatch clock;
  for (int i = 0; i < iters; ++i) encode();
  Row row;
  row.codec = name;
  row.count = n;
  row.encode_s = clock.seconds() / iters;
  row.wire_bytes = e.bytes.size();
  std::vector<float> out(n, 0.0f);
  for (int i = 0; i < warmup; ++i) codec->decode_add(e, out);
  clock.reset();
  for (int i = 0; i < iters; ++i) codec->decode_add(e, out);
  row.decode_s = clock.seconds() / iters;
  const CodecStats& after = codec->stats();
  if (after.selected > before.selected)
    row.note = fmt::format("{:.0f} sent/step", static_cast<double>(after.selected - before.selected) / iters);
  if (dynamic_cast<const DgcCodec*>(codec.get()))
    row.note += fmt::format(", {:.2f} refinements/step",
                            static_cast<double>(after.refinements - before.refinements) / iters);
  return row;
}

// The exact alternative to DGC's sampled threshold: |g| copied, the k-th
// largest found by std::nth_element, then the k elements gathered.
Row measure_nth_element(const std::vector<std::vector<float>>& grads, double density, int iters, int warmup) {
  const size_t n = grads[0].size();
  const size_t k =
      std::clamp<size_t>(static_cast<size_t>(std::llround(density * static_cast<double>(n))), 1, n);
  std::vector<float> magnitudes(n);
  std::vector<uint32_t> selected;
  selected.reserve(k);
  size_t step = 0;
  auto select = [&] {
    const std::vector<float>& g = grads[step++ % grads.size()];
    for (size_t i = 0; i < n; ++i) magnitudes[i] = std::abs(g[i]);
    std::nth_element(magnitudes.begin(), magnitudes.begin() + static_cast<std::ptrdiff_t>(k - 1),
                     magnitudes.end(), std::greater<>());
    const float threshold = magnitudes[k - 1];
    selected.clear();
    for (size_t i = 0; i < n && selected.size() < k; ++i)
      if (std::abs(g[i]) >= threshold) selected.push_back(static_cast<uint32_t>(i));
  };
  for (int i = 0; i < warmup; ++i) select();
  Stopwatch clock;
  for (int i = 0; i < iters; ++i) select();
  Row row;
  row.codec = "nth_element";
  row.count = n;
  row.encode_s = clock.seconds() / iters;
  row.wire_bytes = 8 * selected.size();
  row.note = fmt::format("exact top-k at DGC's density {} (k = {}), selection only", density, k);
  return row;
}

std::string csv_text(const std::vector<Row>& rows) {
  std::string out = "codec,elements,encode_seconds,encode_gbps,decode_seconds,decode_gbps,wire_bytes,dense_bytes\n";
  for (const Row& r : rows)
    out += fmt::format("{},{},{:.9f},{:.6f},{},{},{},{}\n", r.codec, r.count, r.encode_s, gbps(r.count, r.encode_s),
                       r.decode_s > 0 ? fmt::format("{:.9f}", r.decode_s) : "",
                       r.decode_s > 0 ? fmt::format("{:.6f}", gbps(r.count, r.decode_s)) : "", r.wire_bytes,
                       r.count * sizeof(float));
  return out;
}

}  // namespace

std::vector<size_t> parse_element_counts(const std::string& text) {
  return parse_x4_range(
      text, [&](const std::string& one) { return parse_one_count(one, text); }, "--sizes");
}

CLI::App* add_bench_compress_command(CLI::App& bench, BenchCompressOptions& o) {
  auto* cmd = bench.add_subcommand(
      "compress",
      "Time each gradient codec's encode and decode on one core, beside an exact nth_element top-k");
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("--sizes", o.sizes,
                  "Gradient sizes in elements: one (1M = 2^20) or a range in x4 steps (1M:64M)");
  cmd->add_option("--codecs", o.codecs, "Comma-separated codecs (fp16, int8, topk, dgc) or all");
  cmd->add_option("--iters", o.iters, "Timed calls per codec and size");
  cmd->add_option("--warmup", o.warmup, "Untimed calls first");
  cmd->add_option("--csv", o.csv_path, "Also write the results to this CSV file")
      ->check(non_empty_path());
  return cmd;
}

int run_bench_compress_command(BenchCompressOptions& o) {
  if (o.iters < 1) throw Error(fmt::format("--iters must be at least 1 (got {})", o.iters));
  if (o.warmup < 0) throw Error(fmt::format("--warmup must be at least 0 (got {})", o.warmup));
  const std::vector<std::string> codecs = parse_codecs(o.codecs);
  const std::vector<size_t> counts = parse_element_counts(o.sizes);
  // Two gradients, the decoded output and nth_element's magnitudes at least, in floats.
  if (const auto why = beyond_memory(4.0 * sizeof(float) * static_cast<double>(counts.back())))
    throw Error(fmt::format("--sizes {}: {} elements need {}", o.sizes, counts.back(), *why));
  // The CSV path is checked before any measurement and written whole at the
  // end (core/atomic_file.hpp): never through a device, FIFO or symlink, and
  // a failed run leaves no file behind.
  if (!o.csv_path.empty()) check_writable(o.csv_path, "--csv");
  const double dgc_density = DgcOptions{}.density;

  fmt::print(
      "compress: one worker's gradient (standard normal, seed {}), one thread, default codec settings; "
      "mean of {} calls after {} untimed\nGB/s: fp32 gradient bytes (4 per element) per second\n",
      kGradientSeed, o.iters, o.warmup);
  fmt::print("{:>12} {:>9} {:>11} {:>11} {:>11} {:>11} {:>10}  {}\n", "codec", "elements", "encode ms",
             "encode GB/s", "decode ms", "decode GB/s", "wire/fp32", "");
  std::vector<Row> rows;
  for (const size_t n : counts) {
    // Two gradients in turn, so that stateful codecs do not see one gradient again and again.
    const std::vector<std::vector<float>> grads = {normal_gradient(n, kGradientSeed),
                                                   normal_gradient(n, kGradientSeed + 1)};
    std::vector<Row> these;
    for (const std::string& name : codecs) these.push_back(measure_codec(name, grads, o.iters, o.warmup));
    these.push_back(measure_nth_element(grads, dgc_density, o.iters, o.warmup));
    for (const Row& r : these) {
      fmt::print("{:>12} {:>9} {:>11.3f} {:>11.3f} {:>11} {:>11} {:>10.5f}  {}\n", r.codec,
                 count_text(r.count), r.encode_s * 1e3, gbps(r.count, r.encode_s),
                 r.decode_s > 0 ? fmt::format("{:.3f}", r.decode_s * 1e3) : "-",
                 r.decode_s > 0 ? fmt::format("{:.3f}", gbps(r.count, r.decode_s)) : "-",
                 static_cast<double>(r.wire_bytes) / static_cast<double>(r.count * sizeof(float)), r.note);
      std::fflush(stdout);
    }
    rows.insert(rows.end(), these.begin(), these.end());
  }
  if (!o.csv_path.empty()) write_text_file(o.csv_path, csv_text(rows), "--csv");
  return 0;
}

}  // namespace ptrain
