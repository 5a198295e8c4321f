#pragma once
// The seed's hybrid scheme: every worker computes the gradient of its own
// mini-batch, the G gradients are averaged with an all-reduce, and every
// replica applies the same update, so all replicas stay identical. It behaves
// as one worker with a G times larger batch.
#include "sync/gradient_reducer.hpp"
#include "sync/strategy.hpp"

namespace ptrain {

class HybridAllreduce : public WorkerStrategy {
 public:
  HybridAllreduce(Model& model, Communicator& comm, const StrategyConfig& config);
  ~HybridAllreduce() override;
  void start() override;
  float step(const Batch& batch, const StepInfo& info) override;
  CodecStats codec_stats() const override { return reducer_->codec_stats(); }

 private:
  Model& model_;
  Communicator& comm_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<GradientReducer> reducer_;
};

class HybridGroup : public StrategyGroup {
 public:
  explicit HybridGroup(StrategyConfig config) : config_(std::move(config)) {}
  std::unique_ptr<WorkerStrategy> for_worker(Model& model, Communicator& comm) override {
    return std::make_unique<HybridAllreduce>(model, comm, config_);
  }

 private:
  StrategyConfig config_;
};

}  // namespace ptrain
