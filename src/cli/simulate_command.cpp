#include "cli/simulate_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cli/path_option.hpp"
#include "compress/codec_registry.hpp"
#include "compress/pull_codec_registry.hpp"
#include "core/error.hpp"
#include "core/fields.hpp"
#include "perfmodel/calibration.hpp"
#include "perfmodel/codec_costs.hpp"
#include "run/result_file.hpp"

namespace ptrain {

namespace {

// The model sums over the workers: a million is far past any cluster, and quick.
constexpr size_t kMaxWorkers = size_t{1} << 20;
constexpr size_t kMaxCount = size_t{1} << 40;

// The codec of a dense exchange: what a value costs on the wire (int8 at a chunk of 256).
double codec_bytes_per_value(const std::string& codec) {
  auto choice = CodecRegistry::make(codec);
  if (!choice) throw Error("--codec: " + CodecRegistry::unknown("codec", codec));
  if (auto* int8 = std::get_if<Int8Options>(&*choice)) int8->chunk = 256;
  const auto bytes = dense_bytes_per_value(*choice);
  if (!bytes) throw Error("--codec " + codec + ": a sparse codec is modelled by --exchange allgather (--sparse-codec)");
  return *bytes;
}

// What a pulled parameter costs under a pull codec, at its defaults.
double pull_codec_bytes_per_value(const std::string& codec) {
  const auto choice = PullCodecRegistry::make(codec);
  if (!choice) throw Error("--pull-codec: " + PullCodecRegistry::unknown("pull codec", codec));
  return pull_bytes_per_value(*choice);
}

void check_sparse_codec(const std::string& codec) {
  auto choice = CodecRegistry::make(codec);
  if (!choice) throw Error("--sparse-codec: " + CodecRegistry::unknown("codec", codec));
  if (!sparse(*choice)) throw Error("--sparse-codec " + codec + ": not a sparse codec (a dense one is --codec)");
}

}  // namespace

CLI::App* add_simulate_command(CLI::App& app, SimulateOptions& o) {
  auto* cmd = app.add_subcommand(
      "simulate", "Predict step time, samples/s and scaling efficiency from 1 to 1,024 workers (alpha-beta model)");
  cmd->option_defaults()->always_capture_default();
  auto& m = o.model;
  m.parameters = 25e6;
  cmd->add_option("--parameters", m.parameters, "Model size in parameters (floats)");
  cmd->add_option("--compute-per-sample", o.compute_per_sample_ms, "Forward + backward of one sample, milliseconds");
  cmd->add_option("--backward-fraction", m.backward_fraction, "Share of the compute that is backward");
  // Unsigned counts are range-checked as text: CLI11 would read -1 as 2^64 - 1
  // (a table of 2^64 workers never ended).
  cmd->add_option("--batch", m.batch, "Batch per worker")->check(CLI::Range(size_t{1}, kMaxCount));
  cmd->add_option("--workers", o.workers, "Comma-separated worker counts")
      ->delimiter(',')
      ->check(CLI::Range(size_t{1}, kMaxWorkers));
  cmd->add_option("--bandwidth", o.bandwidths_gbit, "Comma-separated link bandwidths, Gbit/s per direction")
      ->delimiter(',');
  cmd->add_option("--latency", o.latency_us, "Per-message latency, microseconds");
  cmd->add_option("--exchange", o.exchanges,
                  "Comma-separated: ring, hd, allgather (sparse, --density), ps, ps-async (parameter servers without a barrier), hierarchical (--local-workers), pipeline (--stages, --microbatches, --activation-bytes)")
      ->delimiter(',');
  cmd->add_option("--local-workers", m.local_workers,
                  "hierarchical: worker threads on each host (N / T hosts); a --calibrate report's run is modelled "
                  "with its own")
      ->check(CLI::Range(size_t{1}, kMaxWorkers));
  cmd->add_option("--stages", m.stages, "pipeline: stages per pipeline (N / S pipelines side by side)")
      ->check(CLI::Range(size_t{1}, kMaxWorkers));
  cmd->add_option("--microbatches", m.microbatches, "pipeline: micro-batches a step")
      ->check(CLI::Range(size_t{1}, kMaxCount));
  cmd->add_option("--activation-bytes", m.activation_bytes_per_sample,
                  "pipeline: bytes of activations crossing each stage boundary per sample (a report's pipeline "
                  "section says what a run sent)");
  cmd->add_option("--schedule", o.schedule, "pipeline: the order of each stage's passes, gpipe or 1f1b");
  cmd->add_option("--stage-shares", m.stage_shares,
                  "pipeline: each stage's share of the compute and the parameters, comma-separated and relative (a "
                  "report's stages' parameters; default: equal)")
      ->delimiter(',');
  cmd->add_option("--microbatch-cost", o.microbatch_ns_per_parameter,
                  "pipeline: what each micro-batch costs a stage beyond its samples, nanoseconds per parameter of "
                  "the stage (its gradient zeroed, written and summed, its weights read; bench/model_check.py "
                  "calibrates it)");
  cmd->add_option("--hop-bandwidth", o.hop_bandwidth_gbit,
                  "pipeline: Gbit/s the activations' messages cross a link at (0: --bandwidth; a link shaped by a "
                  "token bucket, as tools/netcluster's are, passes a message that fits its burst faster)");
  cmd->add_option("--eager-limit", m.eager_limit_bytes,
                  "pipeline: messages of at most this many bytes are sent without waiting for the receiver, larger "
                  "ones wait for it (OpenMPI's TCP transport: 65536; threads: every message, so any size past the "
                  "activations')");
  cmd->add_option("--memory-bandwidth", o.memory_gbytes_s,
                  "hierarchical: a host's memory bandwidth, GB/s read plus written (bench allreduce's copy ceiling)");
  cmd->add_option("--codec", o.codec, "Dense exchanges: none, fp16 or int8");
  cmd->add_option("--pull-codec", o.pull_codec,
                  fmt::format("ps, ps-async: what a pull sends back, at the codec's defaults: none (fp32), fp16, "
                              "int8 (one scale per {} values) or topk ({:g}% of the changes as index and value, a "
                              "dense pull every {})",
                              Int8PullOptions{}.chunk, 100 * TopkPullOptions{}.ratio, TopkPullOptions{}.refresh));
  cmd->add_option("--sparse-codec", o.sparse_codec, "allgather: dgc or topk, whose CPU cost --codec-costs gives");
  cmd->add_option("--codec-costs", o.codec_costs,
                  "Encode and decode time per value of each codec, from this ptrain bench compress --csv file")
      ->check(non_empty_path());
  cmd->add_option("--cores-per-rank", m.cores_per_rank,
                  "Cores each worker has (below 1: ranks share cores, and codecs take longer; overlap needs 2)");
  cmd->add_option("--density", m.density, "allgather: fraction of the gradient sent (DGC: 0.001)");
  cmd->add_option("--servers", m.servers, "ps: shards, each on its own link")->check(CLI::Range(size_t{1}, kMaxWorkers));
  cmd->add_option("--backup", m.backup, "Backup workers: a step waits for N - b of them")
      ->check(CLI::Range(size_t{0}, kMaxWorkers));
  cmd->add_option("--straggler-mean", m.straggler_mean,
                  "Each worker's compute is base x (1 + E), E exponential with this mean (0: none)");
  cmd->add_flag("--overlap,!--no-overlap", m.overlap, "Communication overlaps backward");
  cmd->add_option("--calibrate", o.calibrate_report,
                  "Take parameters, batch and compute per sample from this run report (ptrain train --report)")
      ->check(non_empty_path());
  cmd->add_option("--calibrate-bandwidth", o.calibrate_bandwidth_gbit,
                  "The link bandwidth the calibration run had, Gbit/s");
  cmd->add_option("--csv", o.csv_path, "Also write every prediction to this CSV file")
      ->check(non_empty_path());
  m.density = 0.001;
  return cmd;
}

int run_simulate_command(SimulateOptions& o) {
  StepModelConfig base = o.model;
  base.latency_s = o.latency_us * 1e-6;
  base.bytes_per_value = codec_bytes_per_value(o.codec);
  base.summable = summed_on_the_wire(*CodecRegistry::make(o.codec));
  base.pull_bytes_per_value = pull_codec_bytes_per_value(o.pull_codec);
  check_sparse_codec(o.sparse_codec);
  base.compute_per_sample_s = o.compute_per_sample_ms * 1e-3;
  base.memory_bytes_s = o.memory_gbytes_s * 1e9;
  if (const auto wrong = field_from_text(base.schedule, o.schedule)) throw Error("--schedule: " + *wrong);
  base.microbatch_s_per_parameter = o.microbatch_ns_per_parameter * 1e-9;
  base.hop_bandwidth_bits_s = o.hop_bandwidth_gbit * 1e9;
  std::vector<ExchangeKind> exchanges;
  for (const auto& e : o.exchanges) exchanges.push_back(parse_exchange_kind(e));
  for (double b : o.bandwidths_gbit)
    if (!(b > 0 && b <= 1e9)) throw Error(fmt::format("--bandwidth must be > 0 and at most 1e9 Gbit/s (got {})", b));
  if (!o.calibrate_report.empty() && !(o.calibrate_bandwidth_gbit > 0 && o.calibrate_bandwidth_gbit <= 1e9))
    throw Error(fmt::format("--calibrate-bandwidth must be > 0 and at most 1e9 Gbit/s (got {})",
                            o.calibrate_bandwidth_gbit));
  if (!o.csv_path.empty()) check_writable(o.csv_path, "--csv");
  auto codec_of = [&](ExchangeKind e) { return e == ExchangeKind::SparseAllgather ? o.sparse_codec : o.codec; };
  // The codec CPU cost of each exchange (none without --codec-costs, or for fp32).
  auto with_codec_cost = [&](StepModelConfig c, ExchangeKind e) {
    c.exchange = e;
    const std::string codec = codec_of(e);
    if (!o.codec_costs.empty() && compresses(*CodecRegistry::make(codec))) {
      const CodecCost cost = load_codec_cost(o.codec_costs, codec, c.parameters);
      c.encode_s_per_value = cost.encode_s_per_value;
      c.decode_s_per_value = cost.decode_s_per_value;
    }
    return c;
  };
  if (!o.calibrate_report.empty()) {
    StepModelConfig run = with_codec_cost(base, exchanges.front());
    run.bandwidth_bits_s = o.calibrate_bandwidth_gbit * 1e9;
    const Calibration c = calibrate_from_report(o.calibrate_report, run);
    base.parameters = c.parameters;
    base.batch = c.batch;
    base.compute_per_sample_s = c.compute_per_sample_s;
    fmt::print("calibrated from {} ({} workers, {} exchange at {} Gbit/s, {:.3f} ms a step): {:.4f} ms of compute per sample\n",
               o.calibrate_report, c.workers, to_string(run.exchange), o.calibrate_bandwidth_gbit, c.step_s * 1000,
               c.compute_per_sample_s * 1000);
  }
  validate_step_model(base);
  fmt::print("{:.3g} M parameters, batch {} per worker, {:.4f} ms compute per sample, latency {} us, codec {}, {}\n",
             base.parameters / 1e6, base.batch, base.compute_per_sample_s * 1000, o.latency_us, o.codec,
             base.overlap ? "overlap with backward" : "no overlap");
  if (std::find(exchanges.begin(), exchanges.end(), ExchangeKind::Pipeline) != exchanges.end())
    fmt::print("pipeline: {} stages, {} micro-batches a step, {}, {:g} bytes of activations a sample across each "
               "boundary; batch {} per pipeline (equal stages and free messages would idle {:.0f}% of the step)\n",
               base.stages, base.microbatches, enum_name(base.schedule), base.activation_bytes_per_sample, base.batch,
               100.0 * static_cast<double>(base.stages - 1) / static_cast<double>(base.microbatches + base.stages - 1));
  // Each exchange's model, its codec cost read once.
  std::map<ExchangeKind, StepModelConfig> model_of;
  for (auto e : exchanges) {
    const StepModelConfig& c = model_of[e] = with_codec_cost(base, e);
    if (c.encode_s_per_value > 0 || c.decode_s_per_value > 0)
      fmt::print("{} codec {}: encode {:.3f} ns, decode {:.3f} ns a value (from {}), {} core(s) per rank\n",
                 to_string(e), codec_of(e), c.encode_s_per_value * 1e9, c.decode_s_per_value * 1e9, o.codec_costs,
                 c.cores_per_rank);
  }
  std::string csv =
      "bandwidth_gbit,exchange,workers,compute_ms,codec_ms,exchange_ms,step_ms,samples_per_s,efficiency,"
      "bubble_fraction,boundary_bytes\n";
  for (double gbit : o.bandwidths_gbit) {
    fmt::print("\nat {} Gbit/s: step ms / samples/s / efficiency\n  {:>7}", gbit, "workers");
    for (auto e : exchanges) fmt::print("  {:>30}", to_string(e));
    fmt::print("\n");
    std::map<ExchangeKind, StepPrediction> best;
    std::map<ExchangeKind, std::vector<StepPrediction>> rows;
    for (size_t n : o.workers) {
      fmt::print("  {:>7}", n);
      for (auto e : exchanges) {
        StepModelConfig c = model_of.at(e);
        c.bandwidth_bits_s = gbit * 1e9;
        if (e == ExchangeKind::Pipeline && n % c.stages != 0) {  // no whole pipelines
          fmt::print("  {:>30}", "-");
          continue;
        }
        const StepPrediction p = predict_step(c, n);
        rows[e].push_back(p);
        if (p.samples_per_s > best[e].samples_per_s) best[e] = p;
        fmt::print("  {:>30}", fmt::format("{:.2f} / {:.0f} / {:.0f}%", p.step_s * 1000, p.samples_per_s, 100 * p.efficiency));
        csv += fmt::format("{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.2f},{:.6f},{:.6f},{:.0f}\n", gbit, to_string(e), n,
                           p.compute_s * 1000, p.codec_s * 1000, p.exchange_s * 1000, p.step_s * 1000,
                           p.samples_per_s, p.efficiency, p.bubble_fraction, p.boundary_bytes);
      }
      fmt::print("\n");
    }
    for (auto e : exchanges)
      fmt::print("  {:<10} most samples/s at {} workers ({:.0f} samples/s)\n", to_string(e), best[e].workers,
                 best[e].samples_per_s);
    if (rows.count(ExchangeKind::SparseAllgather) && rows.count(ExchangeKind::RingAllreduce)) {
      const auto& sparse = rows[ExchangeKind::SparseAllgather];
      const auto& ring = rows[ExchangeKind::RingAllreduce];
      std::string where = "never, up to " + std::to_string(o.workers.back()) + " workers";
      for (size_t i = 0; i < sparse.size(); ++i)
        if (sparse[i].workers > 1 && sparse[i].step_s > ring[i].step_s) {
          where = fmt::format("from {} workers on", sparse[i].workers);
          break;
        }
      fmt::print("  sparse all-gather (density {}, its codec's time included) is slower than dense ring all-reduce: {}\n",
                 base.density, where);
    }
  }
  if (!o.csv_path.empty()) {
    write_text_file(o.csv_path, csv, "--csv");
    fmt::print("\ncsv {}\n", o.csv_path);
  }
  return 0;
}

}  // namespace ptrain
