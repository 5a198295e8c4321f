#include "model/torch/flat_module.hpp"

#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "core/error.hpp"
#include "core/stopwatch.hpp"
#include "core/timeline.hpp"
#include "model/torch/sequential_stage.hpp"
#include "model/torch/torch_error.hpp"

namespace ptrain {

namespace {

// Runs after a parameter's AccumulateGrad node has added this pass's gradient
// into the flat buffer: that segment of grads() is final.
class GradientReadyPostHook : public torch::autograd::FunctionPostHook {
 public:
  GradientReadyPostHook(const Model::GradientReadyHook& hook, size_t segment)
      : hook_(hook), segment_(segment) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    if (hook_) hook_(segment_);
    return outputs;
  }

 private:
  const Model::GradientReadyHook& hook_;  // the module's, which outlives its accumulators
  size_t segment_;
};

std::vector<int64_t> with_count(size_t count, const std::vector<int64_t>& shape) {
  std::vector<int64_t> out{static_cast<int64_t>(count)};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

Task task_of(const std::vector<int64_t>& label_shape) {
  return label_shape.empty() ? Task::Classification : Task::LanguageModel;
}

// LibTorch throws c10::Error; TorchScript's interpreter also std::runtime_error.
[[noreturn]] void rethrow_as_one_line(const std::string& name) {
  try {
    throw;
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    throw Error("model " + name + ": " + torch_error_line(e));
  } catch (const std::exception& e) {
    throw Error("model " + name + ": " + first_line(e.what()));
  }
}

// Cross-entropy over the last dimension: output [N, classes] with labels [N],
// or [N, T, classes] with labels [N, T].
torch::Tensor cross_entropy(const torch::Tensor& output, const torch::Tensor& labels,
                            torch::nn::functional::CrossEntropyFuncOptions options = {}) {
  namespace F = torch::nn::functional;
  if (output.dim() == 2) return F::cross_entropy(output, labels, options);
  return F::cross_entropy(output.reshape({-1, output.size(-1)}), labels.reshape({-1}), options);
}

// Puts the module in evaluation mode for the guard's life.
class EvaluationMode {
 public:
  explicit EvaluationMode(const std::function<void(bool)>& set_training) : set_training_(set_training) {
    if (set_training_) set_training_(false);
  }
  ~EvaluationMode() {
    if (set_training_) set_training_(true);
  }
  EvaluationMode(const EvaluationMode&) = delete;
  EvaluationMode& operator=(const EvaluationMode&) = delete;

 private:
  const std::function<void(bool)>& set_training_;
};

// The module's parameters, once it is moved to `device` (with its buffers).
FlatModule::Parts parts_of(const std::shared_ptr<torch::nn::Module>& module, ForwardFunction forward,
                           LossFunction loss, const torch::Device& device) {
  FlatModule::Parts parts;
  if (!module) throw Error("model: no module given (a null torch::nn::Module)");
  if (!device.is_cpu()) module->to(device);
  for (const auto& item : module->named_parameters(/*recurse=*/true))
    parts.parameters.emplace_back(item.key(), item.value());
  parts.forward = std::move(forward);
  parts.loss = std::move(loss);
  // A Sequential is its children run in order (its own forward is that loop).
  if (auto* net = dynamic_cast<torch::nn::SequentialImpl*>(module.get())) {
    for (size_t c = 0; c < net->size(); ++c) {
      size_t trained = 0;
      for (const auto& p : net->ptr(c)->parameters(/*recurse=*/true)) trained += p.requires_grad() ? 1 : 0;
      parts.children.push_back({fmt::format("{}: {}", c, net->ptr(c)->name()),
                                [net, c](const torch::Tensor& x) { return (net->begin() + static_cast<std::ptrdiff_t>(c))->forward(x); },
                                trained});
    }
  }
  // Raw pointer: the FlatModule holds the module and outlives its Parts.
  parts.set_training = [m = module.get()](bool on) { m->train(on); };
  return parts;
}

}  // namespace

torch::Tensor input_tensor(const float* data, size_t count, const std::vector<int64_t>& sample_shape, Task task) {
  auto x = torch::from_blob(const_cast<float*>(data), with_count(count, sample_shape), torch::kFloat32);
  return task == Task::LanguageModel ? x.to(torch::kInt64) : x;
}

torch::Tensor label_tensor(const int64_t* labels, size_t count, const std::vector<int64_t>& label_shape) {
  return torch::from_blob(const_cast<int64_t*>(labels), with_count(count, label_shape), torch::kInt64);
}

torch::Device torch_device(const ComputeDevice& device) {
  if (device.cpu()) return torch::kCPU;
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(std::max(device.index, 0))};
}

std::vector<std::pair<std::string, torch::Tensor>> bound_parameters(
    const std::vector<std::pair<std::string, torch::Tensor>>& parameters, const std::string& name,
    const torch::Device& device) {
  // A tensor registered in two places (a Linear used twice) is one parameter:
  // LibTorch lists it under each name, so keep its first. Parameters that do
  // not require a gradient are frozen: like buffers (BatchNorm's running
  // statistics), they stay in each replica and are not synchronized; the seed
  // (or the TorchScript file) makes them the same in every replica to start with.
  std::vector<std::pair<std::string, torch::Tensor>> trained;
  std::unordered_set<const c10::TensorImpl*> seen;
  for (const auto& [key, p] : parameters) {
    if (!p.defined() || !p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
    if (p.scalar_type() != torch::kFloat32 || p.device() != device)
      throw Error("model " + name + ": parameter " + key + " is " +
                  std::string(c10::toString(p.scalar_type())) + " on " + p.device().str() +
                  "; ptrain trains float32 parameters, here on " + device.str());
    if (!p.is_leaf()) throw Error("model " + name + ": parameter " + key + " is computed, not a leaf tensor");
    trained.emplace_back(key, p);
  }
  if (trained.empty()) throw Error("model " + name + ": has no parameters to train");
  return trained;
}

FlatModule::FlatModule(std::string name, std::shared_ptr<torch::nn::Module> module, ForwardFunction forward,
                       LossFunction loss, const ComputeDevice& device)
    : FlatModule(std::move(name), parts_of(module, std::move(forward), std::move(loss), torch_device(device)), device) {
  module_ = std::move(module);
}

FlatModule::FlatModule(std::string name, torch::nn::Sequential net, const ComputeDevice& device)
    : FlatModule(std::move(name), net.ptr(), [m = net.get()](const torch::Tensor& x) { return m->forward(x); }, {},
                 device) {}

FlatModule::FlatModule(std::string name, Parts parts, const ComputeDevice& device)
    : name_(std::move(name)),
      forward_(std::move(parts.forward)),
      loss_(std::move(parts.loss)),
      set_training_(std::move(parts.set_training)),
      children_(std::move(parts.children)),
      device_(torch_device(device)),
      staged_(device.cuda || device.staged) {
  if (!forward_) throw Error("model " + name_ + ": no forward function given");
  auto trained = bound_parameters(parts.parameters, name_, device_);
  for (const auto& [key, p] : trained) layout_.add(key, p.sizes().vec());
  const auto total = static_cast<int64_t>(layout_.total());
  const auto on_device = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  if (device.cuda) stream_ = c10::impl::VirtualGuardImpl(device_.type()).getStreamFromGlobalPool(device_);
  flat_params_ = torch::empty({total}, on_device);
  flat_grads_ = torch::zeros({total}, on_device);
  // Pinned host memory lets the copies run at the bus's speed (and the
  // parameters' copy in run ahead of the pass on the replica's stream).
  const auto on_host = torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(device.cuda);
  host_params_ = staged_ ? torch::empty({total}, on_host) : flat_params_;
  host_grads_ = staged_ ? torch::zeros({total}, on_host) : flat_grads_;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < trained.size(); ++i) {
    const FlatSegment& seg = layout_.segments()[i];
    auto& p = trained[i].second;
    const auto off = static_cast<int64_t>(seg.offset), n = static_cast<int64_t>(seg.numel);
    auto param_view = flat_params_.narrow(0, off, n).view(seg.shape);
    param_view.copy_(p);
    // set_data keeps the tensor (its TensorImpl, which the module and every
    // place that shares it point to) and swaps its storage for the view.
    p.set_data(param_view);
    // A defined .grad makes AccumulateGrad add into it in place, i.e. into the flat buffer.
    p.mutable_grad() = flat_grads_.narrow(0, off, n).view(seg.shape);
    bound_.push_back(p);
    if (staged_) continue;
    accumulators_.push_back(torch::autograd::impl::grad_accumulator(p));
    accumulators_.back()->add_post_hook(std::make_unique<GradientReadyPostHook>(ready_hook_, i));
  }
  if (staged_) host_params_.copy_(flat_params_);
}

bool FlatModule::set_gradient_ready_hook(GradientReadyHook hook) {
  if (staged_ || whole_) return false;  // a stage's segments are not the hooks' numbers
  ready_hook_ = std::move(hook);
  return true;
}

void FlatModule::wait_for_device() const {
  if (stream_) stream_->synchronize();
}

void FlatModule::parameters_to_device() {
  if (!staged_) return;
  Stopwatch copying;
  flat_params_.copy_(host_params_, /*non_blocking=*/true);  // ordered before the pass on this stream
  traffic_.to_device_bytes += static_cast<uint64_t>(host_params_.nbytes());
  traffic_.seconds += copying.seconds();
}

torch::Tensor FlatModule::on_device(const torch::Tensor& host) {
  if (!staged_) return host;
  Stopwatch copying;
  auto moved = host.to(device_);
  traffic_.to_device_bytes += static_cast<uint64_t>(host.nbytes());
  traffic_.seconds += copying.seconds();
  return moved;
}

torch::Tensor FlatModule::loss_of(const torch::Tensor& output, const torch::Tensor& labels) const {
  return loss_ ? loss_(output, labels) : cross_entropy(output, labels);
}

void FlatModule::check_whole(const char* what) const {
  if (whole_)
    throw Error(fmt::format("model {}: this replica keeps layers {}-{} only (a pipeline stage), so it cannot {}",
                            name_, kept_first_, kept_end_ - 1, what));
}

float FlatModule::forward_backward(const Batch& batch) {
  check_whole("run a whole forward and backward pass");
  if (batch.size() == 0) throw Error(name_ + " model: empty batch");
  try {
    std::optional<c10::StreamGuard> on_stream;
    if (stream_) on_stream.emplace(*stream_);
    parameters_to_device();
    flat_grads_.zero_();
    auto x = on_device(input_tensor(batch.features.data(), batch.size(), batch.sample_shape, task_of(batch.label_shape)));
    auto y = on_device(label_tensor(batch.labels.data(), batch.size(), batch.label_shape));
    torch::Tensor loss;
    {
      TimelineSpan span("forward");
      loss = loss_of(forward_(x), y);
    }
    if (loss.numel() != 1)
      throw Error("model " + name_ + ": the loss has shape " + c10::str(loss.sizes()) + ", not a single value");
    {
      TimelineSpan span("backward");
      loss.backward();
    }
    if (staged_) {
      wait_for_device();  // the backward pass, so that the copy's time is the copy's
      Stopwatch copying;
      host_grads_.copy_(flat_grads_);
      traffic_.to_host_bytes += static_cast<uint64_t>(flat_grads_.nbytes());
      traffic_.seconds += copying.seconds();
    }
    ++traffic_.steps;
    return loss.item<float>();
  } catch (...) {
    rethrow_as_one_line(name_);
  }
}

std::vector<int64_t> FlatModule::output_shape(const Batch& batch) {
  check_whole("compute its output");
  try {
    torch::NoGradGuard no_grad;
    EvaluationMode evaluating(set_training_);  // no BatchNorm statistics from a look at the shapes
    std::optional<c10::StreamGuard> on_stream;
    if (stream_) on_stream.emplace(*stream_);
    parameters_to_device();
    auto x = on_device(input_tensor(batch.features.data(), batch.size(), batch.sample_shape, task_of(batch.label_shape)));
    const auto sizes = forward_(x).sizes();
    return {sizes.begin(), sizes.end()};
  } catch (...) {
    rethrow_as_one_line(name_);
  }
}

std::vector<ModelLayer> FlatModule::layers(std::string& why_not) const {
  if (whole_) return whole_->layers;
  if (children_.empty()) {
    why_not = "model " + name_ + " is not a Sequential (a module that runs its children in order), so it cannot be "
              "split into pipeline stages";
    return {};
  }
  if (staged_) {
    why_not = "model " + name_ + ": pipeline stages compute on the CPU (run.device cpu)";
    return {};
  }
  return sequential_layers(children_, layout_, name_, why_not).layers;
}

std::unique_ptr<ModelStage> FlatModule::stage(size_t first, size_t end) {
  std::string why_not;
  const SequentialLayers split = whole_ ? *whole_ : sequential_layers(children_, layout_, name_, why_not);
  const bool kept = !whole_ || (kept_first_ <= first && end <= kept_end_);
  if (split.layers.empty() || staged_ || first >= end || end > split.layers.size() || !kept)
    throw Error(fmt::format("model {}: no stage of layers [{}, {})", name_, first, end));
  // A replica that keeps some layers numbers its segments from its first.
  const size_t base = whole_ ? split.layers[kept_first_].first_segment : 0;
  const ModelLayer& last = split.layers[end - 1];
  return std::make_unique<SequentialStage>(*this, children_, split.first_child[first], split.first_child[end],
                                           split.layers[first].first_segment - base,
                                           last.first_segment + last.segments - base, end == split.layers.size());
}

bool FlatModule::keep_layers(size_t first, size_t end) {
  std::string why_not;
  if (whole_ || staged_) return false;
  SequentialLayers split = sequential_layers(children_, layout_, name_, why_not);
  if (split.layers.empty() || first >= end || end > split.layers.size()) return false;
  const size_t from = split.layers[first].first_segment;
  const size_t to = split.layers[end - 1].first_segment + split.layers[end - 1].segments;
  FlatLayout kept;
  for (size_t s = from; s < to; ++s) kept.add(layout_.segments()[s].name, layout_.segments()[s].shape);
  const auto total = static_cast<int64_t>(kept.total());
  auto params = torch::empty({total}, torch::kFloat32);
  auto grads = torch::zeros({total}, torch::kFloat32);
  torch::NoGradGuard no_grad;
  for (size_t s = 0; s < bound_.size(); ++s) {
    auto& p = bound_[s];
    if (s < from || s >= to) {  // nothing of the old buffers stays referenced: they are freed
      p.set_data(torch::empty({0}, torch::kFloat32));
      p.mutable_grad() = torch::Tensor();
      continue;
    }
    const FlatSegment& seg = kept.segments()[s - from];
    const auto off = static_cast<int64_t>(seg.offset), n = static_cast<int64_t>(seg.numel);
    auto view = params.narrow(0, off, n).view(seg.shape);
    view.copy_(p);
    p.set_data(view);
    p.mutable_grad() = grads.narrow(0, off, n).view(seg.shape);
  }
  flat_params_ = host_params_ = params;
  flat_grads_ = host_grads_ = grads;
  layout_ = std::move(kept);
  whole_ = std::move(split);
  kept_first_ = first, kept_end_ = end;
  ready_hook_ = {};
  return true;
}

void FlatModule::score(const torch::Tensor& out, const torch::Tensor& y, EvaluationSums& sums) const {
  if (loss_) {
    // The loss function gives the mean per target: times the targets, it sums.
    sums.loss += loss_(out, y).item<double>() * static_cast<double>(y.numel());
  } else {
    sums.loss += cross_entropy(out, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                     .item<double>();
  }
  // A class per target: the largest output over the last dimension ([N, classes] or [N, T, classes]).
  if (out.dim() == y.dim() + 1 && out.sizes().slice(0, static_cast<size_t>(y.dim())).equals(y.sizes()))
    sums.correct += static_cast<uint64_t>(out.argmax(-1).eq(y).sum().item<int64_t>());
}

Metrics FlatModule::evaluate(const Dataset& data) {
  check_whole("evaluate the model");
  torch::NoGradGuard no_grad;
  EvaluationMode eval(set_training_);
  const size_t chunk = evaluation_chunk(data);
  EvaluationSums sums;
  try {
    std::optional<c10::StreamGuard> on_stream;
    if (stream_) on_stream.emplace(*stream_);
    const DeviceTraffic training = traffic_;  // what the steps moved: evaluating is not a step
    parameters_to_device();
    for (size_t start = 0; start < data.size(); start += chunk) {
      const size_t n = std::min(chunk, data.size() - start);
      auto x = on_device(input_tensor(data.sample(start).data(), n, data.sample_shape(), data.task()));
      auto y = on_device(label_tensor(data.targets(start).data(), n, data.label_shape()));
      score(forward_(x), y, sums);
    }
    traffic_ = training;
  } catch (...) {
    rethrow_as_one_line(name_);
  }
  return Metrics::from_sums(sums.loss, static_cast<size_t>(sums.correct), data.size(),
                            data.size() * data.label_numel());
}

}  // namespace ptrain
