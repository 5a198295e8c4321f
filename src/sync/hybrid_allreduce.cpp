#include "sync/hybrid_allreduce.hpp"

#include <cstddef>

#include "comm/allreduce_algorithms.hpp"

namespace ptrain {

HybridAllreduce::HybridAllreduce(Model& model, Communicator& comm, const StrategyConfig& config)
    : model_(model),
      comm_(comm),
      optimizer_(make_optimizer(config.optimizer, model.params().size())),
      algorithm_(config.allreduce) {}

void HybridAllreduce::start() {
  // Replicas start from rank 0's weights, whatever each was initialised with.
  auto params = model_.params();
  comm_.broadcast(std::as_writable_bytes(params), 0);
}

float HybridAllreduce::step(const Batch& batch) {
  const float loss = model_.forward_backward(batch);
  auto grads = model_.grads();
  allreduce_with(comm_, grads, algorithm_);
  const float inv_workers = 1.0f / static_cast<float>(comm_.size());
  for (float& g : grads) g *= inv_workers;
  optimizer_->step(model_.params(), grads);
  return loss;
}

}  // namespace ptrain
