#pragma once
// What a training run gives back: per-epoch metrics, the loss curve, every
// worker's traffic and steps, the trained parameters, and how the run ended.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "core/dataset.hpp"
#include "core/model.hpp"
#include "data/fashion_mnist.hpp"
#include "model/model_input.hpp"
#include "shm/async_sgd.hpp"
#include "sync/strategy.hpp"
#include "topology/placement_record.hpp"

namespace ptrain {

struct EpochMetrics {
  size_t epoch = 0;  // 1-based
  size_t steps = 0;
  double train_loss = 0;  // mean batch loss over the epoch and all workers
  double test_loss = 0;
  double test_accuracy = 0;    // of the classes, or of the next tokens
  double test_perplexity = 0;  // exp(test_loss): language modelling's figure
  size_t test_targets = 0;     // what the evaluation scored (a stream's: whole evaluation rows)
  double seconds = 0;          // training time of the epoch, evaluation excluded
  double samples_per_s = 0;
};

struct LossPoint {
  size_t step = 0;  // 1-based
  double loss = 0;  // mean over workers of their batch loss at that step
};

// A run that went on past a divergence (rollback) or a failed worker
// (restart), from a checkpoint.
struct Recovery {
  std::string kind;  // "rollback" or "restart"
  std::string why;   // what ended the attempt before
  std::string from;  // the checkpoint (manifest) it went on from ("": the start)
  double lr = 0;     // the learning rate from then on
};

struct RunResult {
  std::vector<EpochMetrics> epochs;
  std::vector<LossPoint> loss_curve;  // every log_every steps
  std::vector<float> step_losses;     // every step, mean over workers (float sums, in rank order)
  std::vector<CommStats> comm;        // per worker
  std::vector<CodecStats> codec;      // per worker (all zero without compression)
  std::vector<float> final_params;    // the model to evaluate (rank 0's after the last step)
  std::vector<ServerStats> servers;   // per parameter-server shard (empty without servers)
  std::vector<PipelineStageStats> pipeline;  // per pipeline worker, in rank order (empty for the other strategies)
  std::vector<size_t> worker_steps;   // steps each worker took (they differ under ssp and async)
  std::vector<std::string> left;      // async: the workers that failed and left, and why
  std::vector<std::pair<std::string, std::string>>
      notes;                        // what the strategy says of the run (summary lines)
  std::vector<float> step_seconds;  // worker 0's training time at the end of each of its steps
  // Shared-memory strategies: how the run ended, the loss checks, staleness,
  // swaps, locks and backoff (its final_params moved to final_params above).
  std::optional<AsyncSgdResult> shared_memory;
  // Training diverged (a non-finite loss or test loss, a gradient beyond
  // fp16's range): the run stopped there, every worker at the same point.
  bool diverged = false;
  std::string diverged_why;          // "worker 2: the loss became nan at step 140"
  std::vector<Recovery> recoveries;  // run(): each rollback and restart, in order
  std::string resumed_from;          // the checkpoint (manifest) the run went on from ("": started afresh)
  size_t resumed_at_step = 0;        // the steps that checkpoint had taken
  size_t checkpoints = 0;            // checkpoints this run wrote
  DeviceTraffic device_traffic;      // worker 0's copies between host and device (none on the CPU)
  PlacementRecord placement;         // where this process's threads and shared parameters went
  size_t steps = 0;                  // per worker; under ssp and async, the most any worker took
  size_t samples = 0;                // samples processed by all workers
  double train_seconds = 0;          // evaluation excluded
  double wall_seconds = 0;
  double samples_per_s = 0;
  // What ran: filled by run() (run/run.hpp).
  std::string model;
  Task task = Task::Classification;
  size_t parameters = 0;
  size_t train_samples = 0, test_samples = 0;
  // What the model was built for, how its inputs were transformed, and whether
  // the caller's factory (RunInputs::model) built it: what saving the trained
  // model needs besides final_params (run/save_model.hpp).
  ModelInput model_input;
  std::optional<Standardization> standardization;  // none: features as loaded
  bool caller_model = false;
  std::string device;  // where worker 0 computed: "cpu", "cuda:0 (NVIDIA H100 ...)"
};

// Tokens a sample holds: its targets (one for a class, T for a sequence).
inline size_t tokens_per_sample(const RunResult& r) {
  size_t n = 1;
  for (const int64_t d : r.model_input.label_shape) n *= static_cast<size_t>(d);
  return n;
}

// The parameter servers' bytes, per step of any worker (empty without servers).
inline ServerTraffic server_traffic(const RunResult& r) {
  uint64_t steps = 0;
  for (const size_t s : r.worker_steps) steps += s;
  return server_traffic(r.servers, steps);
}

}  // namespace ptrain
