#include "sync/hybrid_allreduce.hpp"

#include <cstddef>

namespace ptrain {

HybridAllreduce::HybridAllreduce(Model& model, Communicator& comm, const OptimizerConfig& optimizer)
    : model_(model), comm_(comm), optimizer_(make_optimizer(optimizer, model.params().size())) {}

void HybridAllreduce::start() {
  // Replicas start from rank 0's weights, whatever each was initialised with.
  auto params = model_.params();
  comm_.broadcast(std::as_writable_bytes(params), 0);
}

float HybridAllreduce::step(const Batch& batch) {
  const float loss = model_.forward_backward(batch);
  auto grads = model_.grads();
  comm_.allreduce(grads);
  const float inv_workers = 1.0f / static_cast<float>(comm_.size());
  for (float& g : grads) g *= inv_workers;
  optimizer_->step(model_.params(), grads);
  return loss;
}

}  // namespace ptrain
