#pragma once
// The seed's "synchronous" baseline: the model lives in one central place and
// the workers take turns, one active at a time: worker r takes global steps
// r, r+G, r+2G, ... Each turn copies the central weights, computes a gradient
// on the worker's own batch and applies it centrally. Correct, but only one
// worker computes at any moment.
#include <condition_variable>
#include <mutex>
#include <string_view>
#include <vector>

#include "sync/strategy.hpp"

namespace ptrain {

struct SequentialOptions {
  static constexpr std::string_view name = "sequential";
  static constexpr std::string_view summary =
      "the synchronous baseline: one central model, workers take turns (threads of one process only)";
  static constexpr bool takes_codec = false;  // nothing goes on a wire
  static constexpr bool distributed = false;  // the turns are taken under one lock, in one process
  static constexpr bool checkpoints = true;   // saves and resumes its whole state
  template <class Self, class Visit>
  static void fields(Self&, Visit&&) {}
  std::unique_ptr<StrategyGroup> make_group(const StrategyConfig& config, size_t num_params, int workers) const;
};

class SequentialGroup : public StrategyGroup {
 public:
  SequentialGroup(const StrategyConfig& config, size_t num_params, int workers);
  std::unique_ptr<WorkerStrategy> for_worker(Model& model, Communicator& comm) override;
  void abort(const std::string& reason) override;

 private:
  friend class SequentialTurns;
  std::mutex mutex_;
  std::condition_variable turn_changed_;
  uint64_t turn_ = 0;  // global step whose worker may go now
  bool aborted_ = false;
  std::string abort_reason_;
  std::vector<float> central_;
  OptimizerConfig optimizer_config_;  // its lr and schedule: the rate of each turn
  std::unique_ptr<Optimizer> optimizer_;
  int workers_;
  std::chrono::milliseconds turn_timeout_;
  // The first worker whose loss diverged, recorded in its turn, and the step
  // (every worker's local_step_ then) at which every worker hears of it.
  std::string diverged_why_;
  uint64_t diverged_step_ = 0;
};

class SequentialTurns : public WorkerStrategy {
 public:
  SequentialTurns(SequentialGroup& group, Model& model, Communicator& comm);
  void start() override;
  float step(const Batch& batch, const StepInfo& info) override;
  void sync_for_evaluation() override;
  // Once every turn of this step is taken (the turns' own timeout): the
  // divergence recorded in one of them. `mine` is not shared: the workers
  // are threads of one process, which a worker's failure ends.
  StepStop agree_to_stop(Communicator& comm, const StepStop& mine) override;
  // Worker 0 saves the central weights, the optimizer and the turn; every
  // worker its own step count.
  void save_state(StateWriter& out) override;
  void load_state(StateReader& in) override;

 private:
  SequentialGroup& group_;
  Model& model_;
  Communicator& comm_;
  uint64_t local_step_ = 0;
};

}  // namespace ptrain
