#include "sync/hybrid_allreduce.hpp"

#include <fmt/format.h>

#include <cstddef>

namespace ptrain {

std::unique_ptr<StrategyGroup> HybridOptions::make_group(const StrategyConfig& config, size_t, int) const {
  return std::make_unique<HybridGroup>(*this, config);
}

HybridAllreduce::HybridAllreduce(Model& model, Communicator& comm, const HybridOptions& options,
                                 const StrategyConfig& config)
    : model_(model), comm_(comm), options_(options), optimizer_(make_optimizer(config.optimizer, model.params().size())) {
  // Overlap needs the model to say when each gradient is final; otherwise the
  // buckets go after backward.
  overlapping_ = options.overlap && model_.set_gradient_ready_hook(
                                        [this](size_t segment) { reducer_->segment_ready(segment); });
  try {
    reducer_ = std::make_unique<GradientReducer>(comm_, options.allreduce, model_.grads(), model_.layout(),
                                                 options.bucket_size.bytes, overlapping_, config.codec);
  } catch (...) {
    model_.set_gradient_ready_hook({});  // the model outlives this half-built strategy
    throw;
  }
  if (overlapping_ && !reducer_->overlapping()) {  // one bucket: nothing to start during backward
    model_.set_gradient_ready_hook({});
    overlapping_ = false;
  }
}

HybridAllreduce::~HybridAllreduce() { model_.set_gradient_ready_hook({}); }

void HybridAllreduce::start() {
  // Replicas start from rank 0's weights, whatever each was initialised with.
  auto params = model_.params();
  comm_.broadcast(std::as_writable_bytes(params), 0);
}

float HybridAllreduce::step(const Batch& batch, const StepInfo& info) {
  reducer_->begin_step(info);
  const float loss = model_.forward_backward(batch);
  reducer_->finish_step();  // the mean gradient, in grads()
  optimizer_->step(model_.params(), model_.grads());
  return loss;
}

std::vector<std::pair<std::string, std::string>> HybridAllreduce::notes() const {
  return {{"all-reduce", fmt::format("{} in {} bucket(s) of at most {}, overlap with backward {}",
                                     enum_name(options_.allreduce), reducer_->bucket_count(),
                                     human_bytes(options_.bucket_size.bytes), overlapping_ ? "on" : "off")}};
}

}  // namespace ptrain
