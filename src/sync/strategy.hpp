#pragma once
// A synchronization strategy decides when a gradient is applied and to which
// parameter version (DESIGN.md). It drives a Model, a Communicator and an
// Optimizer and owns none of their code.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "compress/codec.hpp"
#include "core/model.hpp"
#include "optim/optimizer.hpp"

namespace ptrain {

// One worker's side of a strategy.
class WorkerStrategy {
 public:
  virtual ~WorkerStrategy() = default;
  // Called once by every worker before its first step (e.g. to agree on initial weights).
  virtual void start() {}
  // One training step on this worker's batch; returns the loss of that batch.
  virtual float step(const Batch& batch, const StepInfo& info) = 0;
  // Makes the worker's model hold the parameters to evaluate and report.
  virtual void sync_for_evaluation() {}
  // What this worker's gradient codecs did so far (all zero without compression).
  virtual CodecStats codec_stats() const { return {}; }
};

struct StrategyConfig {
  std::string name = "hybrid";  // hybrid | sequential
  OptimizerConfig optimizer;
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::Native;  // hybrid's gradient all-reduce
  size_t bucket_bytes = size_t{25} << 20;                     // gradient buckets, as PyTorch DDP's default
  bool overlap = true;                                        // all-reduce buckets while backward still runs
  CodecConfig codec;                                          // gradient compression (hybrid)
  // How long a worker waits on the others (a collective, a turn) before failing.
  std::chrono::milliseconds timeout{60000};
};

// The configuration a run really uses. DGC's momentum correction takes the
// momentum over from a momentum optimizer (the codec accumulates the velocity,
// the optimizer becomes plain SGD with the same learning rate and weight
// decay); with any other optimizer the correction is off.
StrategyConfig effective_strategy_config(StrategyConfig config);

// The names --strategy accepts now.
const std::vector<std::string>& strategy_names();

// State shared by all the workers of one run, and the factory of their sides.
class StrategyGroup {
 public:
  virtual ~StrategyGroup() = default;
  virtual std::unique_ptr<WorkerStrategy> for_worker(Model& model, Communicator& comm) = 0;
  // Wakes any worker waiting on the group; it then throws ptrain::Error(reason).
  virtual void abort(const std::string& /*reason*/) {}
};

// Throws ptrain::Error for an unknown name.
std::unique_ptr<StrategyGroup> make_strategy_group(const StrategyConfig& config, size_t num_params,
                                                   int workers);

}  // namespace ptrain
