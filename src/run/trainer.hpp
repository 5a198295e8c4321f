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
#include "run/checkpoint_store.hpp"
#include "run/run_result.hpp"
#include "sync/strategy.hpp"
#include "topology/placer.hpp"

namespace ptrain {

struct TrainConfig {
  StrategyFactory make_strategy;  // e.g. strategy_factory(HybridOptions{})
  StrategyConfig strategy;        // what the run gives it: optimizer, codec, ...
  int workers = 1;
  size_t batch = 64;  // per worker
  size_t microbatches = 1;  // each step's batch as this many micro-batches, gradients summed (model/microbatch_model.hpp)
  // A pipeline's stages (0: not a pipeline): each run of this many workers
  // holds the model's stages, reads one shard of the data, and its strategy
  // takes the micro-batches itself.
  int pipeline_stages = 0;
  double epochs = 1;  // fractions allowed: the run then ends within its last epoch
  uint64_t seed = 42;     // data order (the model's init seed is in its own config)
  size_t max_steps = 0;   // stop after this many steps in all (0: run every epoch to the end)
  size_t log_every = 10;  // record the loss every k steps
  std::chrono::milliseconds comm_timeout{60000};
  // Where the threads go (topology/placer.hpp): worker r as thread r, shard
  // s as thread workers + s; in an MPI rank its threads after those of the
  // host's lower ranks (which share the cores when mpirun binds no rank).
  // Each replica is built under its worker's memory policy. Default: no
  // thread bound. A rank with one worker (train_on) is not bound here: mpirun binds ranks.
  Placer placer;
  // --straggler RANK:FACTOR: worker RANK computes FACTOR times slower (-1: nobody).
  int straggler_rank = -1;
  double straggler_factor = 1;
  uint64_t memory_limit = 0;  // bytes each worker may hold to train (0: no limit; run/memory_limit.hpp)
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
