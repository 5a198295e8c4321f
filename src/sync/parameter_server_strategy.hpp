#pragma once
// The parameter-server strategies: ps-sync, ps-backup, ssp and async. The
// parameters and the optimizer live on S shard servers (ps/shard_server.hpp);
// a worker asks shard 0 whether to take a step, pulls the parameters from
// every shard, computes its gradient and pushes a slice of it to each.
// Which gradients make an update, and when a worker may go on, is the
// coordinator's (sync/synchronous_coordinator.hpp,
// sync/bounded_staleness_coordinator.hpp).
#include <memory>

#include "ps/ps_client.hpp"
#include "ps/shard_ranges.hpp"
#include "sync/parameter_server_options.hpp"
#include "sync/strategy.hpp"

namespace ptrain {

class ParameterServerGroup : public StrategyGroup {
 public:
  // Throws ptrain::Error for impossible settings.
  ParameterServerGroup(ServerMode mode, StrategyConfig config, size_t num_params, int workers);
  std::unique_ptr<WorkerStrategy> for_worker(Model& model, Communicator& comm) override;
  int servers() const override { return mode_.servers; }
  std::unique_ptr<WorkerStrategy> for_worker_with_servers(Model& model, Communicator& comm,
                                                          Communicator& with_servers) override;
  void serve(Communicator& with_servers, int shard, const FlatLayout& layout) override;

 private:
  friend class ParameterServerWorker;
  ServerMode mode_;
  StrategyConfig config_;
  int workers_;
  std::vector<ShardRange> ranges_;
};

class ParameterServerWorker : public WorkerStrategy {
 public:
  ParameterServerWorker(const ParameterServerGroup& group, Model& model, Communicator& with_servers);
  void start() override;
  bool next_step(size_t done, size_t epoch_steps) override;
  size_t step_batches() const override { return step_batches_; }
  float step(const Batch& batch, const StepInfo& info) override;
  void sync_for_evaluation() override;
  CodecStats codec_stats() const override { return client_.codec_stats(); }
  bool leave() override;
  bool diverged() override;
  bool run_over() const override { return run_over_; }
  void finish() override;
  std::vector<ServerStats> server_stats() const override { return stats_; }
  bool lockstep() const override { return group_.mode_.aggregated && group_.mode_.backup == 0; }
  // Every worker saves its codecs; worker 0 also asks every shard for its state.
  void save_state(StateWriter& out) override;
  void load_state(StateReader& in) override;

 private:
  // Pulls until every shard answered with the same version (aggregated updates need it).
  void pull_same_version(uint64_t min_version);

  const ParameterServerGroup& group_;
  Model& model_;
  PsClient client_;
  uint64_t min_version_ = 0;     // what shard 0 said to pull at least
  uint64_t epoch_received_ = 0;  // pushes every shard has by the end of this epoch
  bool holding_ticket_ = false;  // began a step and has not pushed it
  size_t step_batches_ = 1;      // the step's, as the coordinator gave it
  bool run_over_ = false;
  bool between_epochs_ = true;  // the coordinator said this epoch is over, and no new one has begun
  std::vector<std::vector<std::byte>> shard_states_;  // worker 0 on resume: what start() restores
  std::vector<ServerStats> stats_;
};

}  // namespace ptrain
