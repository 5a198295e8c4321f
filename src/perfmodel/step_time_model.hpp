#pragma once
// A performance model of one synchronous-ish training step: compute, then the
// gradient exchange over links of a given bandwidth and latency (the
// alpha-beta model), with or without overlap of communication and backward.
// It predicts step time, samples/s and scaling efficiency for any worker
// count, so measured runs on a few hosts can be projected to a thousand.
#include <cstddef>
#include <string>
#include <vector>

#include "core/pipeline_schedule.hpp"

namespace ptrain {

enum class ExchangeKind {
  RingAllreduce,     // dense: 2(N-1) steps of M/N bytes
  HalvingDoubling,   // dense: 2 log2(N) steps, the same 2(N-1)/N M bytes
  SparseAllgather,   // top-k / DGC: every worker's k values and indices to every other, (N-1) steps
  ParameterServer,   // push to S shards (at bytes_per_value), pull the parameters back (at pull_bytes_per_value)
  // The same pushes and pulls without a barrier (async, and ssp when no worker
  // is s steps behind): a worker's step is its compute and its own exchange,
  // unless the shards' links are slower than that for N workers a round. A
  // shard serves one request at a time (it receives a push, then sends a
  // pull), so its link carries N pushes and N pulls one after another.
  AsyncParameterServer,
  // Dense, in two levels, local_workers threads a host: reduce within the
  // host in shared memory, ring between the N / T hosts with each thread its
  // 1/T of the buffer (the host's link shared by its T streams: 2(H-1)/H M in
  // all), spread back within the host.
  Hierarchical,
  // Pipelines of `stages` workers (sync/pipeline_strategy.hpp), N / S of
  // them side by side: each step the batch flows through the stages as M
  // micro-batches in the schedule's order (perfmodel/pipeline_flow.hpp: with
  // equal stages and free messages, (M + S - 1) slots of which (S - 1) idle
  // on every stage, the bubble), then the N / S workers holding each stage
  // all-reduce its share of the parameters by ring.
  Pipeline,
};

// What OpenMPI's TCP transport sends with a message's bytes, counted against
// its eager limit: measured with OpenMPI 4.1, a 65,480-byte message leaves at
// once and a 65,482-byte one waits for its receiver.
constexpr double kMessageHeaderBytes = 56;

struct StepModelConfig {
  double parameters = 0;           // model size, in floats
  double compute_per_sample_s = 0; // forward + backward of one sample on one worker
  double backward_fraction = 2.0 / 3.0;  // the share of compute that is backward (overlappable)
  size_t batch = 32;               // per worker
  double bandwidth_bits_s = 1e9;   // per link and direction
  double latency_s = 50e-6;        // per message
  ExchangeKind exchange = ExchangeKind::RingAllreduce;
  double bytes_per_value = 4;      // dense codecs: 4 (fp32), 2 (fp16), about 1 (int8)
  double pull_bytes_per_value = 4; // ps: what a pulled parameter costs (the pull codec: 4 dense, 2 fp16, ...)
  // Whether the dense codec's wire form can be summed on the way (fp32, fp16).
  // int8's cannot: every worker's P values are all-gathered, (N-1) messages
  // of P x bytes_per_value a link, and each worker decodes N of them.
  bool summable = true;
  double density = 1;              // sparse all-gather: fraction of the values sent (DGC 0.001)
  double sparse_bytes_per_value = 8;  // value + index
  size_t servers = 1;              // parameter server shards, each on its own link
  // Hierarchical: worker threads a host, and the host's memory bandwidth (bytes
  // read plus bytes written, all its cores together, as STREAM counts them).
  size_t local_workers = 1;
  double memory_bytes_s = 10e9;
  size_t backup = 0;               // ps-backup: the step waits for N - b workers
  // Each worker's compute takes base x (1 + E), E exponential with this mean (0: no stragglers).
  double straggler_mean = 0;
  bool overlap = false;            // communication runs during backward
  // The codec's CPU time, seconds per gradient value on one core (ptrain bench
  // compress measures them); 0 without a codec. See codec_seconds().
  double encode_s_per_value = 0;
  double decode_s_per_value = 0;
  // Cores each worker rank has. Below 1, ranks share cores and the codecs'
  // CPU time stretches by 1/cores. Overlap needs a core besides backward's
  // for the communication thread, which polls MPI all along: it hides
  // min(backward, exchange) in full from 2 cores on, in proportion between 1
  // and 2, and not at all below 1.
  double cores_per_rank = 2;
  // Pipeline: stages per pipeline, micro-batches a step, and the bytes of
  // activations that cross each stage boundary per sample (their gradients
  // as many back). `batch` is then each pipeline's.
  size_t stages = 1;
  size_t microbatches = 1;
  double activation_bytes_per_sample = 0;
  PipelineSchedule schedule = PipelineSchedule::OneForwardOneBackward;
  // The rate a pipeline's messages cross a link at (0: bandwidth_bits_s). A
  // link shaped by a token bucket (tc tbf, tools/netcluster) lets a message
  // that fits its burst through faster than its rate, and a pipeline's
  // messages come one at a time between the stages' passes.
  double hop_bandwidth_bits_s = 0;
  // Messages whose bytes and header (kMessageHeaderBytes) fit within this
  // are sent eagerly, larger ones by rendezvous (perfmodel/pipeline_flow.hpp):
  // 64 KiB is OpenMPI's TCP transport's default; threads send every message
  // eagerly.
  double eager_limit_bytes = 65536;
  // Each stage's share of the compute and of the parameters, relative (empty: equal).
  std::vector<double> stage_shares;
  // What each micro-batch costs a stage beyond its samples, seconds per
  // parameter of the stage: its gradient zeroed, written and summed into the
  // step's, its weights read, whatever the micro-batch's rows (counted with
  // the backward pass).
  double microbatch_s_per_parameter = 0;
};

struct StepPrediction {
  size_t workers = 0;
  double compute_s = 0;     // the step's compute, waiting for the slowest worker it needs
  double exchange_s = 0;    // the gradient exchange alone
  double codec_s = 0;       // encoding and decoding, on the worker's share of a core
  double step_s = 0;
  double samples_per_s = 0;
  double efficiency = 0;    // samples/s over N x one worker's samples/s without communication
  // Pipeline: the fraction of the step a stage idles, on average over the
  // stages ((S - 1) / (M + S - 1) when they are equal and messages free);
  // and the bytes crossing each boundary a step, the activations and their gradients.
  double bubble_fraction = 0;
  double boundary_bytes = 0;
};

// Throws ptrain::Error naming the option (as its flag) when an input is impossible.
void validate_step_model(const StepModelConfig& config);

// Pipeline: how N workers make pipelines (N / S of them); throws
// ptrain::Error when S does not divide N.
size_t pipelines_of(const StepModelConfig& config, size_t workers);
// Pipeline: each stage's share of the compute and of the parameters, summing to 1.
std::vector<double> stage_shares_of(const StepModelConfig& config);

// The exchange's time on N workers (0 for one worker, except with parameter servers).
// Hierarchical: min(T, N) threads on each of ceil(N / T) hosts; within a host
// (3T - 1) M bytes cross memory (each of T buffers read and the sum written,
// then each thread copies the (T-1)/T it does not own), between hosts the
// ring's 2(H-1) latencies and 2(H-1)/H M bytes on each host's link. The flat
// ring over the same hosts is `ring`: its hops between hosts run at the link's
// rate, one per host and step.
double exchange_seconds(const StepModelConfig& config, size_t workers);

// A worker's codec CPU time on N workers: a summable dense codec (fp16) in an
// all-reduce encodes its P values, decode-add-encodes the (N-1)/N P it
// receives while reducing and decodes the P of the result; a sparse codec
// encodes P and decodes every worker's part (N x P, as decode_add touches the
// whole dense range); a parameter-server worker encodes its push. Times the
// stretch of ranks that share cores (cores_per_rank below 1).
double codec_seconds(const StepModelConfig& config, size_t workers);

// Asynchronous parameter servers: the time a shard's link needs for one step of
// every worker, its push and its pull (0 for the other exchanges).
double shard_round_seconds(const StepModelConfig& config, size_t workers);

// The expected compute time of a step that waits for the k fastest of N workers
// (k = N - backup): base x (1 + mean x (1/N + 1/(N-1) + ... + 1/(N-k+1))).
// Asynchronous workers wait for nobody: base x (1 + mean).
double expected_compute_seconds(const StepModelConfig& config, size_t workers);

// Parameter servers, synchronous or not: a worker encodes its push even alone.
bool through_servers(ExchangeKind kind);

StepPrediction predict_step(const StepModelConfig& config, size_t workers);

ExchangeKind parse_exchange_kind(const std::string& name);
std::string to_string(ExchangeKind kind);

}  // namespace ptrain
