#pragma once
// A LibTorch module whose parameters and gradients are views into two flat
// float buffers (DESIGN.md, "Flat buffers"). Autograd accumulates in place into
// the gradient views, so after backward the whole gradient is one span.
//
// Any module binds: a torch::nn::Sequential, a torch::nn::Module of any shape
// with its own forward (branches, residual connections, shared weights), or a
// TorchScript module from Python (model/torch/torchscript_model.cpp).
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/model.hpp"

namespace ptrain {

// The module's output for a batch of inputs of shape [N, sample shape...].
using ForwardFunction = std::function<torch::Tensor(const torch::Tensor& input)>;
// The mean loss over the batch (a scalar): output from ForwardFunction, labels
// of shape [N] (one class per sample) or [N, T] (a target per position).
using LossFunction = std::function<torch::Tensor(const torch::Tensor& output, const torch::Tensor& labels)>;

// The parameters a FlatModule binds, in its layout's order: those that
// require a gradient, each tensor once (under its first name). Throws
// ptrain::Error "model <name>: ..." for one that is not a float32 CPU leaf
// tensor, or when none is left.
std::vector<std::pair<std::string, torch::Tensor>> bound_parameters(
    const std::vector<std::pair<std::string, torch::Tensor>>& parameters, const std::string& name);

class FlatModule : public Model {
 public:
  // What any module brings: its parameters by name (a tensor shared by two
  // submodules may be listed twice: it is bound once, under its first name),
  // how to run it, how to score it, and how to switch it between training and
  // evaluation (Dropout, BatchNorm). forward, loss and set_training keep
  // whatever they call alive.
  struct Parts {
    std::vector<std::pair<std::string, torch::Tensor>> parameters;
    ForwardFunction forward;
    LossFunction loss;                       // empty: mean cross-entropy over the classes
    std::function<void(bool)> set_training;  // empty: the module has no such modes
  };

  FlatModule(std::string name, Parts parts);
  // A torch::nn::Module run by `forward` (which may call into it, or into its submodules).
  FlatModule(std::string name, std::shared_ptr<torch::nn::Module> module, ForwardFunction forward,
             LossFunction loss = {});
  // The built-in models: a Sequential and cross-entropy.
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

  // The module (null for a TorchScript module), and its forward as the model runs it.
  const std::shared_ptr<torch::nn::Module>& module() const { return module_; }
  torch::Tensor forward(const torch::Tensor& input) const { return forward_(input); }

 private:
  torch::Tensor loss_of(const torch::Tensor& output, const torch::Tensor& labels) const;

  std::string name_;
  std::shared_ptr<torch::nn::Module> module_;
  ForwardFunction forward_;
  LossFunction loss_;
  std::function<void(bool)> set_training_;
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
