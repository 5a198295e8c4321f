#pragma once
// A LibTorch module whose parameters and gradients are views into two flat
// float buffers (DESIGN.md, "Flat buffers"). Autograd accumulates in place into
// the gradient views, so after backward the whole gradient is one span.
//
// Any module binds: a torch::nn::Sequential, a torch::nn::Module of any shape
// with its own forward (branches, residual connections, shared weights), or a
// TorchScript module from Python (model/torch/torchscript_model.cpp).
//
// On a GPU (seed 000's hybrid) the module's parameters and gradients are flat
// buffers in device memory, and params() and grads() are their host copies
// (pinned): each step copies the parameters in and the gradients out, so the
// strategies reduce and update on the host as ever. Each replica computes on
// a stream of its own, so workers sharing a GPU overlap.
#include <torch/torch.h>

#include <c10/core/Stream.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/compute_device.hpp"
#include "core/model.hpp"
#include "model/torch/sequential_stage.hpp"

namespace ptrain {

// The module's output for a batch of inputs of shape [N, sample shape...].
using ForwardFunction = std::function<torch::Tensor(const torch::Tensor& input)>;
// The mean loss over the batch (a scalar): output from ForwardFunction, labels
// of shape [N] (one class per sample) or [N, T] (a target per position).
using LossFunction = std::function<torch::Tensor(const torch::Tensor& output, const torch::Tensor& labels)>;

// LibTorch's name for a ComputeDevice.
torch::Device torch_device(const ComputeDevice& device);

// The parameters a FlatModule binds, in its layout's order: those that
// require a gradient, each tensor once (under its first name). Throws
// ptrain::Error "model <name>: ..." for one that is not a float32 leaf tensor
// on `device`, or when none is left.
std::vector<std::pair<std::string, torch::Tensor>> bound_parameters(
    const std::vector<std::pair<std::string, torch::Tensor>>& parameters, const std::string& name,
    const torch::Device& device = torch::kCPU);

// `count` samples (or their targets) of a data set's or batch's memory as a
// tensor of shape [count, shape...], without a copy (the memory outlives the
// pass). For language modelling the inputs are token ids, which an embedding
// takes as int64 (that one a copy).
torch::Tensor input_tensor(const float* data, size_t count, const std::vector<int64_t>& sample_shape, Task task);
torch::Tensor label_tensor(const int64_t* labels, size_t count, const std::vector<int64_t>& label_shape);

// One child of a module that runs its children one after another (a
// Sequential, built in C++ or scripted in Python): what a pipeline stage
// calls (model/torch/sequential_stage.hpp).
struct ModuleChild {
  std::string name;
  ForwardFunction forward;
  size_t trained_parameters = 0;  // tensors it holds that require a gradient
};

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
    // When the module is its children run in order, each of them: it then
    // splits into pipeline stages. Empty otherwise.
    std::vector<ModuleChild> children;
  };

  // The parts' parameters (and buffers) are on `device` already.
  FlatModule(std::string name, Parts parts, const ComputeDevice& device = {});
  // A torch::nn::Module run by `forward` (which may call into it, or into its
  // submodules), moved to `device` first.
  FlatModule(std::string name, std::shared_ptr<torch::nn::Module> module, ForwardFunction forward,
             LossFunction loss = {}, const ComputeDevice& device = {});
  // The built-in models: a Sequential and cross-entropy.
  FlatModule(std::string name, torch::nn::Sequential net, const ComputeDevice& device = {});
  FlatModule(const FlatModule&) = delete;  // the autograd hooks point into it
  FlatModule& operator=(const FlatModule&) = delete;

  std::string name() const override { return name_; }
  const FlatLayout& layout() const override { return layout_; }
  std::span<float> params() override { return {host_params_.data_ptr<float>(), layout_.total()}; }
  std::span<float> grads() override { return {host_grads_.data_ptr<float>(), layout_.total()}; }
  float forward_backward(const Batch& batch) override;
  Metrics evaluate(const Dataset& data) override;
  std::vector<int64_t> output_shape(const Batch& batch) override;
  // Staged on a device, a gradient is on the host only once the whole
  // backward pass is done: no hook (false), every gradient final at the end.
  bool set_gradient_ready_hook(GradientReadyHook hook) override;
  DeviceTraffic device_traffic() const override { return traffic_; }
  // A module of children run in order splits at its layers
  // (model/torch/sequential_stage.hpp), on the CPU.
  std::vector<ModelLayer> layers(std::string& why_not) const override;
  std::unique_ptr<ModelStage> stage(size_t first, size_t end) override;
  // Rebinds the kept layers' parameters to flat buffers of their own and
  // empties the others' (their memory goes); on the CPU.
  bool keep_layers(size_t first, size_t end) override;
  // The mean loss of `output` against `labels`: the module's own, or cross-entropy.
  torch::Tensor loss_of(const torch::Tensor& output, const torch::Tensor& labels) const;
  // Adds `output`'s summed loss and right answers against `labels` to `sums`.
  void score(const torch::Tensor& output, const torch::Tensor& labels, EvaluationSums& sums) const;
  // Training or evaluation mode (Dropout, BatchNorm), where the module has them.
  void set_training(bool on) const {
    if (set_training_) set_training_(on);
  }

  // The module (null for a TorchScript module), and its forward as the model runs it.
  const std::shared_ptr<torch::nn::Module>& module() const { return module_; }
  torch::Tensor forward(const torch::Tensor& input) const { return forward_(input); }
  // Staged on a device: the host's parameters into the module's, before a
  // pass the model runs itself (a recurrent model's evaluation); else nothing.
  void load_parameters() { parameters_to_device(); }

 private:
  // Staged: the host's parameters into the device's buffer, before a pass.
  void parameters_to_device();
  // A batch's inputs or labels, on the device (counted as traffic when staged).
  torch::Tensor on_device(const torch::Tensor& host);
  // Waits for this replica's device work (its stream) to finish.
  void wait_for_device() const;
  // Throws once keep_layers() left this replica a stage of the model.
  void check_whole(const char* what) const;

  std::string name_;
  std::shared_ptr<torch::nn::Module> module_;
  ForwardFunction forward_;
  LossFunction loss_;
  std::function<void(bool)> set_training_;
  std::vector<ModuleChild> children_;  // Parts::children
  FlatLayout layout_;
  std::vector<torch::Tensor> bound_;  // the trained parameters, in the layout's order
  // After keep_layers(): the whole model's layers, and which of them this replica keeps.
  std::optional<SequentialLayers> whole_;
  size_t kept_first_ = 0, kept_end_ = 0;
  torch::Device device_ = torch::kCPU;
  // Copies between host and device buffers each step: on a GPU, or on the
  // CPU when ComputeDevice::staged asks for it (tests).
  bool staged_ = false;
  std::optional<c10::Stream> stream_;  // CUDA: this replica's own
  torch::Tensor flat_params_;  // the module's parameters, on device_
  torch::Tensor flat_grads_;
  torch::Tensor host_params_;  // params() and grads(): flat_* themselves unless staged
  torch::Tensor host_grads_;
  DeviceTraffic traffic_;
  // Each parameter's gradient accumulator, kept alive so that the post-hooks
  // registered on it (which call ready_hook_ once the gradient is accumulated
  // into the flat buffer) survive from one backward pass to the next.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  GradientReadyHook ready_hook_;
};

}  // namespace ptrain
