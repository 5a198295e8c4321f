#pragma once
// A synchronization strategy decides when a gradient is applied and to which
// parameter version (DESIGN.md). It drives a Model, a Communicator and an
// Optimizer and owns none of their code.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "compress/codec_registry.hpp"
#include "compress/pull_codec_registry.hpp"
#include "core/model.hpp"
#include "optim/optimizer.hpp"
#include "ps/server_stats.hpp"
#include "sync/pipeline_stage_stats.hpp"

namespace ptrain {

// Bytes a worker holds to train (WorkerStrategy::memory).
struct WorkerMemory {
  uint64_t state_bytes = 0;       // parameters, gradients, the optimizer's state, the strategy's own buffers
  uint64_t activation_bytes = 0;  // the most held for backward passes so far (0: not counted)
  uint64_t total() const { return state_bytes + activation_bytes; }
};

// Why the workers stop after a step (WorkerStrategy::agree_to_stop).
struct StepStop {
  enum class Kind : uint8_t { None, Diverged, CheckpointFailed };
  Kind kind = Kind::None;
  std::string why;
  bool any() const { return kind != Kind::None; }
};

// One worker's side of a strategy.
class WorkerStrategy {
 public:
  virtual ~WorkerStrategy() = default;
  // Called once by every worker before its first step (e.g. to agree on initial weights).
  virtual void start() {}
  // One training step on this worker's batch; returns the loss of that batch.
  virtual float step(const Batch& batch, const StepInfo& info) = 0;
  // On worker 0: makes its model hold the parameters to evaluate and report.
  virtual void sync_for_evaluation() {}
  // The model's figures over `data` on worker 0 (nothing on the others),
  // after an epoch; every worker calls it. By default worker 0 evaluates its
  // replica after sync_for_evaluation(); a strategy whose workers each keep
  // part of the model evaluates it together.
  virtual std::optional<Metrics> evaluate(Model& model, const Dataset& data, int rank);
  // The whole model's parameters on worker 0 (empty on the others) once
  // training is over, gathered however the workers keep them; every worker
  // calls it.
  virtual std::vector<float> whole_parameters(Model& model, int rank);
  // What this worker holds to train, where the strategy counts it (a
  // pipeline stage); empty: its replica's parameters and gradients and the
  // optimizer's state for all of them.
  virtual std::optional<WorkerMemory> memory() const { return std::nullopt; }
  // What this worker's gradient codecs did so far (all zero without compression).
  virtual CodecStats codec_stats() const { return {}; }

  // Whether the worker takes another step in this epoch, having taken `done`
  // of the epoch's `epoch_steps` per worker. Parameter servers ask their
  // coordinator, so that under ssp and async fast workers take more steps.
  virtual bool next_step(size_t done, size_t epoch_steps) { return done < epoch_steps; }
  // The base batches (--batch samples each) the step next_step allowed takes:
  // more than 1 where a stale-gradient rule gives a stale worker a larger one.
  virtual size_t step_batches() const { return 1; }
  // This worker failed: true when the run goes on without it (async), after
  // telling whoever waits for it; false when the failure ends the run.
  virtual bool leave() { return false; }
  // Lockstep strategies, after every step: whether any worker must stop the
  // run at the step every worker just took (it diverged, or its checkpoint
  // failed), and the first one's reason (kind None: none), the same on every
  // worker. `mine`: this worker's. By default every worker is asked (an
  // all-reduce of one value on `comm`).
  virtual StepStop agree_to_stop(Communicator& comm, const StepStop& mine);
  // This worker's training diverged at its last step (a non-finite loss; it
  // pushed nothing). Lockstep strategies need nothing: the trainer stops every
  // worker at that step. The others end the epoch early for everyone (ssp,
  // ps-backup) and return false, or let the worker leave while the others go
  // on (async) and return true.
  virtual bool diverged() { return false; }
  // True once the strategy has ended the run early (--time-limit): the epoch
  // just ended was the last. The same on every worker.
  virtual bool run_over() const { return false; }
  // Called on every worker after the last step and the last evaluation.
  virtual void finish() {}
  // On worker 0 after finish(): what each parameter-server shard recorded.
  virtual std::vector<ServerStats> server_stats() const { return {}; }
  // On worker 0 after finish(): what each pipeline stage did (pipelines only).
  virtual std::vector<PipelineStageStats> pipeline_stats() const { return {}; }
  // What the summary should say of this strategy's run, as (label, text) lines.
  virtual std::vector<std::pair<std::string, std::string>> notes() const { return {}; }
  // Checkpoints: what decides which of the model's parameters this worker
  // keeps (a pipeline's cut), saved before them and loaded before they are.
  virtual void save_placement(StateWriter& /*out*/) const {}
  virtual void load_placement(StateReader& /*in*/) {}
  // Checkpoints: this worker's state besides its model's parameters (the
  // optimizer's, the codecs', the strategy's own), saved between steps on
  // every worker at the same step and loaded before start(). Strategies whose
  // options declare `checkpoints = true` implement both; the others refuse.
  // Saving may ask remote state of others (parameter-server shards).
  virtual void save_state(StateWriter& out);
  virtual void load_state(StateReader& in);
  // True when every worker takes the same steps (hybrid, sequential,
  // ps-sync): a checkpoint may then be taken inside an epoch. The others
  // (ps-backup, ssp, async) are checkpointed at epoch ends only.
  virtual bool lockstep() const { return true; }
  // True when every worker holds the same parameters and the same
  // save_shared_state between steps (hybrid): worker 0 alone saves them, and
  // every worker loads them from worker 0's part.
  virtual bool replicated() const { return false; }
  virtual void save_shared_state(StateWriter& /*out*/) const {}
  virtual void load_shared_state(StateReader& /*in*/) {}
};

// What a run gives its strategy, whichever it is.
struct StrategyConfig {
  OptimizerConfig optimizer;
  CodecConfig codec;  // gradient compression (strategies that exchange gradients)
  PullCodecChoice pull;  // parameter servers: what a pull sends back
  // How long a worker waits on the others (a collective, a turn) before failing.
  std::chrono::milliseconds timeout{60000};
  size_t steps_per_epoch = 0;     // per worker; set by the trainer
  size_t total_steps = 0;         // per worker over the run (--max-steps may cut the last epoch short)
  size_t microbatches = 1;        // a pipeline's micro-batches per step (run.microbatches)
  double time_limit_seconds = 0;  // strategies that stop on time: end the run after this much training (0: none)
  uint64_t memory_limit = 0;      // bytes a worker may hold to train (0: none); a pipeline cuts its layers to fit
};

// State shared by all the workers of one run, and the factory of their sides.
// "worker 2: the loss became nan at step 140 (diverged; ...)": `step` is 1-based.
std::string diverged_loss(int worker, float loss, uint64_t step);

class StrategyGroup {
 public:
  virtual ~StrategyGroup() = default;
  virtual std::unique_ptr<WorkerStrategy> for_worker(Model& model, Communicator& comm) = 0;
  // Parameter servers: how many shard servers the run needs besides the workers.
  virtual int servers() const { return 0; }
  // A worker's side when there are servers: `comm` joins the workers only,
  // `with_servers` the W workers (ranks 0..W-1) and the S shards (W..W+S-1).
  virtual std::unique_ptr<WorkerStrategy> for_worker_with_servers(Model& model, Communicator& comm,
                                                                  Communicator& /*with_servers*/) {
    return for_worker(model, comm);
  }
  // Serves shard `shard` (rank W + shard of `with_servers`) until the workers finish.
  virtual void serve(Communicator& /*with_servers*/, int /*shard*/, const FlatLayout& /*layout*/) {}
  // Wakes any worker waiting on the group; it then throws ptrain::Error(reason).
  virtual void abort(const std::string& /*reason*/) {}
};

// Builds a run's StrategyGroup: a strategy's options struct bound to its
// make_group (see strategy_factory), so the trainer never names a strategy.
using StrategyFactory =
    std::function<std::unique_ptr<StrategyGroup>(const StrategyConfig& config, size_t num_params, int workers)>;

template <class Options>
StrategyFactory strategy_factory(Options options) {
  return [options](const StrategyConfig& config, size_t num_params, int workers) {
    return options.make_group(config, num_params, workers);
  };
}

}  // namespace ptrain
