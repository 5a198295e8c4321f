#pragma once
// A LibTorch module whose parameters and gradients are views into two flat
// float buffers (DESIGN.md, "Flat buffers"). Autograd accumulates in place into
// the gradient views, so after backward the whole gradient is one span.
#include <torch/torch.h>

#include "core/model.hpp"

namespace ptrain {

class FlatModule : public Model {
 public:
  FlatModule(std::string name, torch::nn::Sequential net);
  FlatModule(const FlatModule&) = delete;  // the autograd hooks point into it
  FlatModule& operator=(const FlatModule&) = delete;

  std::string name() const override { return name_; }
  const FlatLayout& layout() const override { return layout_; }
  std::span<float> params() override { return {flat_params_.data_ptr<float>(), layout_.total()}; }
  std::span<float> grads() override { return {flat_grads_.data_ptr<float>(), layout_.total()}; }
  float forward_backward(const Batch& batch) override;
  Metrics evaluate(const Dataset& data) override;
  bool set_gradient_ready_hook(GradientReadyHook hook) override;

  torch::nn::Sequential& net() { return net_; }

 private:
  std::string name_;
  torch::nn::Sequential net_;
  FlatLayout layout_;
  torch::Tensor flat_params_;
  torch::Tensor flat_grads_;
  // Each parameter's gradient accumulator, kept alive so that the post-hooks
  // registered on it (which call ready_hook_ once the gradient is accumulated
  // into the flat buffer) survive from one backward pass to the next.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  GradientReadyHook ready_hook_;
};

}  // namespace ptrain
