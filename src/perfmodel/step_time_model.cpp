#include "perfmodel/step_time_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "perfmodel/pipeline_flow.hpp"

namespace ptrain {

ExchangeKind parse_exchange_kind(const std::string& name) {
  if (name == "ring") return ExchangeKind::RingAllreduce;
  if (name == "hd") return ExchangeKind::HalvingDoubling;
  if (name == "allgather") return ExchangeKind::SparseAllgather;
  if (name == "ps") return ExchangeKind::ParameterServer;
  if (name == "ps-async") return ExchangeKind::AsyncParameterServer;
  if (name == "hierarchical") return ExchangeKind::Hierarchical;
  if (name == "pipeline") return ExchangeKind::Pipeline;
  throw Error("--exchange: unknown exchange '" + name +
              "' (choose ring, hd, allgather, ps, ps-async, hierarchical or pipeline)");
}

std::string to_string(ExchangeKind kind) {
  switch (kind) {
    case ExchangeKind::RingAllreduce: return "ring";
    case ExchangeKind::HalvingDoubling: return "hd";
    case ExchangeKind::SparseAllgather: return "allgather";
    case ExchangeKind::ParameterServer: return "ps";
    case ExchangeKind::AsyncParameterServer: return "ps-async";
    case ExchangeKind::Hierarchical: return "hierarchical";
    case ExchangeKind::Pipeline: return "pipeline";
  }
  return "?";
}

void validate_step_model(const StepModelConfig& c) {
  // Bounded far past any machine, so that every figure the model computes is finite.
  auto positive = [](double v, const char* flag, double most, const char* unit) {
    if (!(v > 0) || !(v <= most))
      throw Error(fmt::format("{} must be > 0 and at most {:g}{} (got {:g}{})", flag, most, unit, v, unit));
  };
  positive(c.parameters, "--parameters", 1e15, "");
  positive(c.compute_per_sample_s, "--compute-per-sample", 1e6, " s");
  positive(c.bandwidth_bits_s, "--bandwidth", 1e18, " bit/s");
  positive(c.bytes_per_value, "--bytes-per-value", 64, "");
  positive(c.pull_bytes_per_value, "--pull-bytes-per-value", 64, "");
  positive(c.sparse_bytes_per_value, "--sparse-bytes-per-value", 64, "");
  if (!(c.latency_s >= 0) || !(c.latency_s <= 1e6))
    throw Error(fmt::format("--latency must be >= 0 and at most 1e6 s (got {:g} s)", c.latency_s));
  if (!(c.backward_fraction >= 0 && c.backward_fraction <= 1))
    throw Error(fmt::format("--backward-fraction must be in [0, 1] (got {})", c.backward_fraction));
  if (!(c.density > 0 && c.density <= 1)) throw Error(fmt::format("--density must be in (0, 1] (got {})", c.density));
  if (c.batch < 1) throw Error("--batch must be at least 1");
  if (!(c.encode_s_per_value >= 0 && c.decode_s_per_value >= 0) || !std::isfinite(c.encode_s_per_value) ||
      !std::isfinite(c.decode_s_per_value))
    throw Error(fmt::format("--codec-costs: encode and decode times must be >= 0 (got {} and {} s a value)",
                            c.encode_s_per_value, c.decode_s_per_value));
  if (!(c.cores_per_rank > 0) || !std::isfinite(c.cores_per_rank))
    throw Error(fmt::format("--cores-per-rank must be > 0 (got {})", c.cores_per_rank));
  if (c.servers < 1) throw Error("--servers must be at least 1");
  if (c.local_workers < 1) throw Error("--local-workers must be at least 1");
  if (!(c.memory_bytes_s > 0) || !(c.memory_bytes_s <= 1e15))
    throw Error(fmt::format("--memory-bandwidth must be > 0 and at most 1e6 GB/s (got {:g} GB/s)",
                            c.memory_bytes_s / 1e9));
  if (!(c.straggler_mean >= 0) || !std::isfinite(c.straggler_mean))
    throw Error(fmt::format("--straggler-mean must be >= 0 (got {})", c.straggler_mean));
  if (c.stages < 1) throw Error("--stages must be at least 1");
  if (c.microbatches < 1 || c.microbatches > c.batch)
    throw Error(fmt::format("--microbatches must be from 1 to the batch, {} (got {})", c.batch, c.microbatches));
  if (!c.stage_shares.empty() && c.stage_shares.size() != c.stages)
    throw Error(fmt::format("--stage-shares: {} shares for {} stages", c.stage_shares.size(), c.stages));
  for (const double w : c.stage_shares)
    if (!(w > 0) || !(w <= 1e15)) throw Error(fmt::format("--stage-shares must each be > 0 (got {:g})", w));
  if (!(c.activation_bytes_per_sample >= 0) || !(c.activation_bytes_per_sample <= 1e15))
    throw Error(fmt::format("--activation-bytes must be >= 0 and at most 1e15 (got {:g})", c.activation_bytes_per_sample));
  if (!(c.hop_bandwidth_bits_s >= 0) || !(c.hop_bandwidth_bits_s <= 1e18))
    throw Error(fmt::format("--hop-bandwidth must be >= 0 and at most 1e9 Gbit/s (got {:g} Gbit/s)",
                            c.hop_bandwidth_bits_s / 1e9));
  if (!(c.microbatch_s_per_parameter >= 0) || !(c.microbatch_s_per_parameter <= 1))
    throw Error(fmt::format("--microbatch-cost must be >= 0 and at most 1e9 ns (got {:g} ns)",
                            c.microbatch_s_per_parameter * 1e9));
  if (!(c.eager_limit_bytes >= 0) || std::isnan(c.eager_limit_bytes))
    throw Error(fmt::format("--eager-limit must be >= 0 (got {:g})", c.eager_limit_bytes));
}

size_t pipelines_of(const StepModelConfig& c, size_t workers) {
  if (workers % c.stages != 0)
    throw Error(fmt::format("{} workers do not make whole pipelines of {} stages", workers, c.stages));
  return workers / c.stages;
}

std::vector<double> stage_shares_of(const StepModelConfig& c) {
  if (c.stage_shares.empty()) return std::vector<double>(c.stages, 1.0 / static_cast<double>(c.stages));
  double sum = 0;
  for (const double w : c.stage_shares) sum += w;
  std::vector<double> shares;
  for (const double w : c.stage_shares) shares.push_back(w / sum);
  return shares;
}

namespace {

// The largest stage's share: its holders' all-reduce finishes last.
double largest_stage_share(const StepModelConfig& c) {
  const auto shares = stage_shares_of(c);
  return *std::max_element(shares.begin(), shares.end());
}

}  // namespace

double exchange_seconds(const StepModelConfig& c, size_t workers) {
  const double n = static_cast<double>(workers);
  const double beta = c.bandwidth_bits_s / 8;  // bytes/s per link and direction
  const double dense = c.parameters * c.bytes_per_value;
  const bool gathered = !c.summable && (c.exchange == ExchangeKind::RingAllreduce ||
                                        c.exchange == ExchangeKind::HalvingDoubling);
  if (gathered) return workers < 2 ? 0 : (n - 1) * (c.latency_s + dense / beta);
  switch (c.exchange) {
    case ExchangeKind::RingAllreduce:
      if (workers < 2) return 0;
      return 2 * (n - 1) * (c.latency_s + dense / n / beta);
    case ExchangeKind::HalvingDoubling:
      if (workers < 2) return 0;
      return 2 * std::ceil(std::log2(n)) * c.latency_s + 2 * (n - 1) / n * dense / beta;
    case ExchangeKind::SparseAllgather: {
      if (workers < 2) return 0;
      const double message = c.parameters * c.density * c.sparse_bytes_per_value;
      return (n - 1) * (c.latency_s + message / beta);
    }
    case ExchangeKind::ParameterServer: {
      // Push (at the codec's bytes per value) then pull the parameters (at the pull codec's). A worker's link
      // carries its own push and pull; each shard's link carries 1/S of every worker's.
      const double push = dense;
      const double pull = c.parameters * c.pull_bytes_per_value;
      const double per_worker = (push + pull) / beta;
      const double per_shard = n * (push + pull) / static_cast<double>(c.servers) / beta;
      return 2 * c.latency_s + std::max(per_worker, per_shard);
    }
    case ExchangeKind::AsyncParameterServer:  // the worker's own push and pull; the shards: shard_round_seconds
      return 2 * c.latency_s + (c.parameters * c.bytes_per_value + c.parameters * c.pull_bytes_per_value) / beta;
    case ExchangeKind::Pipeline: {  // the stage's share, by ring among the pipelines
      const double g = static_cast<double>(pipelines_of(c, workers));
      if (g < 2) return 0;
      return 2 * (g - 1) * (c.latency_s + dense * largest_stage_share(c) / g / beta);
    }
    case ExchangeKind::Hierarchical: {
      const size_t threads = std::min(c.local_workers, workers);
      const double t = static_cast<double>(threads);
      const double hosts = std::ceil(n / t);
      const double within = threads > 1 ? (3 * t - 1) * dense / c.memory_bytes_s : 0;
      const double between = hosts > 1 ? 2 * (hosts - 1) * c.latency_s + 2 * (hosts - 1) / hosts * dense / beta : 0;
      return within + between;
    }
  }
  return 0;
}

double codec_seconds(const StepModelConfig& c, size_t workers) {
  const double n = static_cast<double>(workers);
  const double enc = c.encode_s_per_value, dec = c.decode_s_per_value;
  double per_value = 0;
  switch (c.exchange) {
    case ExchangeKind::RingAllreduce:
    case ExchangeKind::HalvingDoubling:
      per_value = c.summable ? (enc + dec) * (1 + (n - 1) / n) : enc + n * dec;
      break;
    case ExchangeKind::Hierarchical: {  // the ring's work, between the hosts
      const double hosts = std::ceil(n / static_cast<double>(std::min(c.local_workers, workers)));
      per_value = (enc + dec) * (1 + (hosts - 1) / hosts);
      break;
    }
    case ExchangeKind::SparseAllgather: per_value = enc + n * dec; break;
    case ExchangeKind::Pipeline: {  // its stage's share, through a ring of the pipelines
      const double g = static_cast<double>(pipelines_of(c, workers));
      per_value = g < 2 ? 0 : (enc + dec) * (1 + (g - 1) / g) * largest_stage_share(c);
      break;
    }
    case ExchangeKind::ParameterServer:
    case ExchangeKind::AsyncParameterServer: per_value = enc; break;
  }
  return c.parameters * per_value * std::max(1.0, 1 / c.cores_per_rank);
}

double shard_round_seconds(const StepModelConfig& c, size_t workers) {
  if (c.exchange != ExchangeKind::AsyncParameterServer) return 0;
  const double beta = c.bandwidth_bits_s / 8;
  const double push = c.parameters * c.bytes_per_value, pull = c.parameters * c.pull_bytes_per_value;
  return static_cast<double>(workers) * (push + pull) / static_cast<double>(c.servers) / beta;
}

double expected_compute_seconds(const StepModelConfig& c, size_t workers) {
  const double base = c.compute_per_sample_s * static_cast<double>(c.batch);
  if (c.exchange == ExchangeKind::AsyncParameterServer) return base * (1 + c.straggler_mean);
  const size_t waited = workers > c.backup ? workers - c.backup : 1;
  // The k-th smallest of N exponentials with mean m: m (1/N + 1/(N-1) + ... + 1/(N-k+1)).
  double order = 0;
  for (size_t i = 0; i < waited; ++i) order += 1.0 / static_cast<double>(workers - i);
  return base * (1 + c.straggler_mean * order);
}

bool through_servers(ExchangeKind kind) {
  return kind == ExchangeKind::ParameterServer || kind == ExchangeKind::AsyncParameterServer;
}

namespace {

// The pipeline's flow (perfmodel/pipeline_flow.hpp), then the all-reduce
// among the pipelines (no overlap: a stage updates once its last backward
// pass is done).
StepPrediction predict_pipeline_step(const StepModelConfig& c, size_t workers) {
  StepPrediction p;
  p.workers = workers;
  const size_t pipelines = pipelines_of(c, workers);
  const double rows = static_cast<double>(c.batch) / static_cast<double>(c.microbatches);
  PipelineFlowConfig flow_config;
  flow_config.schedule = c.schedule;
  flow_config.microbatches = c.microbatches;
  for (const double share : stage_shares_of(c)) {
    const double pass = c.compute_per_sample_s * rows * share;
    flow_config.forward_s.push_back(pass * (1 - c.backward_fraction));
    flow_config.backward_s.push_back(pass * c.backward_fraction + c.microbatch_s_per_parameter * c.parameters * share);
  }
  const double hop_bits_s = c.hop_bandwidth_bits_s > 0 ? c.hop_bandwidth_bits_s : c.bandwidth_bits_s;
  flow_config.transfer_s = c.activation_bytes_per_sample * rows / (hop_bits_s / 8);
  flow_config.hop_s = c.latency_s + flow_config.transfer_s;
  flow_config.blocking = c.activation_bytes_per_sample * rows + kMessageHeaderBytes > c.eager_limit_bytes;
  flow_config.cores_per_rank = c.cores_per_rank;
  const PipelineFlow flow = simulate_pipeline_flow(flow_config);
  p.compute_s = *std::max_element(flow.compute_s.begin(), flow.compute_s.end());
  p.exchange_s = flow.step_s - p.compute_s + exchange_seconds(c, workers);
  p.codec_s = pipelines > 1 ? codec_seconds(c, workers) : 0;
  p.step_s = p.compute_s + p.exchange_s + p.codec_s;
  p.samples_per_s = static_cast<double>(pipelines * c.batch) / p.step_s;
  p.efficiency = p.samples_per_s / (static_cast<double>(workers) / c.compute_per_sample_s);
  for (const double idle : flow.idle_s) p.bubble_fraction += idle / p.step_s / static_cast<double>(c.stages);
  p.boundary_bytes = c.stages > 1 ? 2 * static_cast<double>(c.batch) * c.activation_bytes_per_sample : 0;
  return p;
}

}  // namespace

StepPrediction predict_step(const StepModelConfig& c, size_t workers) {
  validate_step_model(c);
  if (workers < 1) throw Error("workers must be at least 1");
  if (c.exchange == ExchangeKind::Pipeline) return predict_pipeline_step(c, workers);
  StepPrediction p;
  p.workers = workers;
  p.compute_s = expected_compute_seconds(c, workers);
  p.exchange_s = exchange_seconds(c, workers);
  p.codec_s = workers > 1 || through_servers(c.exchange) ? codec_seconds(c, workers) : 0;
  const double backward = p.compute_s * c.backward_fraction;
  const double spare_core = std::clamp(c.cores_per_rank - 1, 0.0, 1.0);
  const double hidden = c.overlap ? spare_core * std::min(backward, p.exchange_s) : 0;
  p.step_s = std::max(p.codec_s + p.compute_s + p.exchange_s - hidden, shard_round_seconds(c, workers));
  // Samples computed, as ptrain's reports count them (ps-backup's dropped gradients included).
  p.samples_per_s = static_cast<double>(workers * c.batch) / p.step_s;
  const double alone = static_cast<double>(c.batch) / (c.compute_per_sample_s * static_cast<double>(c.batch));
  p.efficiency = p.samples_per_s / (static_cast<double>(workers) * alone);
  return p;
}

}  // namespace ptrain
