#pragma once
// The training loop: G workers as threads, each with its own model replica,
// its own shard of the data and its side of the synchronization strategy.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "comm/communicator.hpp"
#include "core/dataset.hpp"
#include "core/fields.hpp"
#include "core/model.hpp"
#include "data/fashion_mnist.hpp"
#include "model/model_input.hpp"
#include "shm/async_sgd.hpp"
#include "sync/strategy.hpp"
#include "train/checkpoint_store.hpp"

namespace ptrain {

struct TrainConfig {
  StrategyFactory make_strategy;  // e.g. strategy_factory(HybridOptions{})
  StrategyConfig strategy;        // what the run gives it: optimizer, codec, ...
  int workers = 1;
  size_t batch = 64;  // per worker
  double epochs = 1;  // fractions allowed: the run then ends within its last epoch
  uint64_t seed = 42;     // data order (the model's init seed is in its own config)
  size_t max_steps = 0;   // stop after this many steps in all (0: run every epoch to the end)
  size_t log_every = 10;  // record the loss every k steps
  std::chrono::milliseconds comm_timeout{60000};
  bool pin_workers = true;  // worker r on the r-th allowed core (see core/thread_affinity.hpp)
  // --straggler RANK:FACTOR: worker RANK computes FACTOR times slower (-1: nobody).
  int straggler_rank = -1;
  double straggler_factor = 1;
  // Parameter servers: stop training after this many seconds inside epochs (0: no limit);
  // `epochs` is then the most the run takes.
  double time_limit_s = 0;
  // Checkpoints of the whole training state (strategies whose options declare
  // `checkpoints`): into `dir` every `every` steps or seconds (off: at the end
  // of every epoch), the newest `keep` kept, each holding `plan_json`.
  struct Checkpoints {
    std::string dir;
    Cadence every;
    int keep = 3;
    std::string plan_json;
  } checkpoint;
  // Continue from this checkpoint of `resume_dir` (found by CheckpointStore::newest).
  std::optional<FoundCheckpoint> resume;
  std::string resume_dir;
};

struct EpochMetrics {
  size_t epoch = 0;  // 1-based
  size_t steps = 0;
  double train_loss = 0;  // mean batch loss over the epoch and all workers
  double test_loss = 0;
  double test_accuracy = 0;    // of the classes, or of the next tokens
  double test_perplexity = 0;  // exp(test_loss): language modelling's figure
  size_t test_targets = 0;     // what the evaluation scored (a stream's: whole evaluation rows)
  double seconds = 0;  // training time of the epoch, evaluation excluded
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
  std::vector<size_t> worker_steps;   // steps each worker took (they differ under ssp and async)
  std::vector<std::string> left;      // async: the workers that failed and left, and why
  std::vector<std::pair<std::string, std::string>> notes;  // what the strategy says of the run (summary lines)
  std::vector<float> step_seconds;    // worker 0's training time at the end of each of its steps
  // Shared-memory strategies: how the run ended, the loss checks, staleness,
  // swaps, locks and backoff (its final_params moved to final_params above).
  std::optional<AsyncSgdResult> shared_memory;
  // Training diverged (a non-finite loss or test loss, a gradient beyond
  // fp16's range): the run stopped there, every worker at the same point.
  bool diverged = false;
  std::string diverged_why;  // "worker 2: the loss became nan at step 140"
  std::vector<Recovery> recoveries;  // run(): each rollback and restart, in order
  std::string resumed_from;  // the checkpoint (manifest) the run went on from ("": started afresh)
  size_t resumed_at_step = 0;  // the steps that checkpoint had taken
  size_t checkpoints = 0;      // checkpoints this run wrote
  DeviceTraffic device_traffic;  // worker 0's copies between host and device (none on the CPU)
  size_t steps = 0;          // per worker; under ssp and async, the most any worker took
  size_t samples = 0;        // samples processed by all workers
  double train_seconds = 0;  // evaluation excluded
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

struct Progress {
  size_t epoch = 0, epochs = 0;
  size_t step = 0, steps_per_epoch = 0;  // within the epoch, 1-based
  double loss = 0;                       // running mean of worker 0's loss this epoch
  double samples_per_s = 0;
};

// One step of worker 0 done.
struct StepDone {
  size_t step = 0;     // worker 0's steps in the run so far (those before a resume included)
  size_t epoch = 0;    // 1-based
  float loss = 0;      // worker 0's loss of this step
  double seconds = 0;  // training time so far, evaluation excluded
};

// A checkpoint committed (lockstep: not yet flushed to disk, which a kill of
// the process does not undo): resuming from it goes on after worker 0's `step`.
struct CheckpointDone {
  size_t step = 0;
  std::string manifest;
};

struct TrainCallbacks {
  std::function<void(const Progress&)> on_progress;       // from worker 0, every few steps
  std::function<void(const EpochMetrics&)> on_epoch_end;  // after evaluation
  std::function<void(const StepDone&)> on_step;           // from worker 0, after every step
  // From worker 0 when it next looks after the commit (its next step, its next
  // checkpoint, or the end of the run).
  std::function<void(const CheckpointDone&)> on_checkpoint;
};

// A replica for worker `worker` (which tells its device), or, given
// kLayoutOnly, a model whose layout alone is needed (a parameter-server shard's).
using ModelFactory = std::function<std::unique_ptr<Model>(int worker)>;
inline constexpr int kLayoutOnly = -1;

// Trains and evaluates after every epoch on `test` (if not null). Throws
// ptrain::Error for impossible settings before any work, and when a worker
// fails (naming the worker), after stopping the others.
RunResult train(const TrainConfig& config, const Dataset& train_set, const Dataset* test_set,
                const ModelFactory& make_replica, const TrainCallbacks& callbacks = {});

// The same run as one worker of a group that already exists across processes
// (the MPI backend: one worker per rank). Every rank calls it; rank 0's result
// holds the metrics, the others' only their own timing.
RunResult train_on(Communicator& comm, const TrainConfig& config, const Dataset& train_set,
                   const Dataset* test_set, const ModelFactory& make_replica,
                   const TrainCallbacks& callbacks = {});
// The same run as the T worker threads of one MPI rank among R
// (run.local_workers): thread t of rank r is worker r x T + t of R x T.
// `across[t]` and `mesh[t]` are thread t's communicators over the ranks
// (comm/hierarchical_communicator.hpp). Every rank calls it; rank 0's result
// holds the metrics. No parameter servers.
RunResult train_on_threads(std::span<Communicator* const> across, std::span<Communicator* const> mesh,
                           const TrainConfig& config, const Dataset& train_set, const Dataset* test_set,
                           const ModelFactory& make_replica, const TrainCallbacks& callbacks = {});
// The same with parameter servers: `workers` joins the W worker ranks,
// `with_servers` the W workers and the S shard ranks after them.
RunResult train_on(Communicator& workers, Communicator& with_servers, const TrainConfig& config,
                   const Dataset& train_set, const Dataset* test_set, const ModelFactory& make_replica,
                   const TrainCallbacks& callbacks = {});
// A shard rank's whole part in that run: serves shard (rank - W) until the workers finish.
void serve_on(Communicator& with_servers, const TrainConfig& config, const Dataset& train_set,
              const ModelFactory& make_replica);

}  // namespace ptrain
