#include "model/torch/flat_module.hpp"

#include <unordered_set>

#include "core/error.hpp"
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

// from_blob does not copy: the batch (or data set) outlives the pass. For
// language modelling (a target per position) the inputs are token ids, which
// an embedding takes as int64.
torch::Tensor input_tensor(const float* data, size_t count, const std::vector<int64_t>& sample_shape, Task task) {
  auto x = torch::from_blob(const_cast<float*>(data), with_count(count, sample_shape), torch::kFloat32);
  return task == Task::LanguageModel ? x.to(torch::kInt64) : x;
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

torch::Tensor label_tensor(const int64_t* labels, size_t count, const std::vector<int64_t>& label_shape) {
  return torch::from_blob(const_cast<int64_t*>(labels), with_count(count, label_shape), torch::kInt64);
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

FlatModule::Parts parts_of(const std::shared_ptr<torch::nn::Module>& module, ForwardFunction forward,
                           LossFunction loss) {
  FlatModule::Parts parts;
  if (!module) throw Error("model: no module given (a null torch::nn::Module)");
  for (const auto& item : module->named_parameters(/*recurse=*/true))
    parts.parameters.emplace_back(item.key(), item.value());
  parts.forward = std::move(forward);
  parts.loss = std::move(loss);
  // Raw pointer: the FlatModule holds the module and outlives its Parts.
  parts.set_training = [m = module.get()](bool on) { m->train(on); };
  return parts;
}

}  // namespace

std::vector<std::pair<std::string, torch::Tensor>> bound_parameters(
    const std::vector<std::pair<std::string, torch::Tensor>>& parameters, const std::string& name) {
  // A tensor registered in two places (a Linear used twice) is one parameter:
  // LibTorch lists it under each name, so keep its first. Parameters that do
  // not require a gradient are frozen: like buffers (BatchNorm's running
  // statistics), they stay in each replica and are not synchronized; the seed
  // (or the TorchScript file) makes them the same in every replica to start with.
  std::vector<std::pair<std::string, torch::Tensor>> trained;
  std::unordered_set<const c10::TensorImpl*> seen;
  for (const auto& [key, p] : parameters) {
    if (!p.defined() || !p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
    if (p.scalar_type() != torch::kFloat32 || !p.device().is_cpu())
      throw Error("model " + name + ": parameter " + key + " is " +
                  std::string(c10::toString(p.scalar_type())) + " on " + p.device().str() +
                  "; ptrain trains float32 parameters on the CPU");
    if (!p.is_leaf()) throw Error("model " + name + ": parameter " + key + " is computed, not a leaf tensor");
    trained.emplace_back(key, p);
  }
  if (trained.empty()) throw Error("model " + name + ": has no parameters to train");
  return trained;
}

FlatModule::FlatModule(std::string name, std::shared_ptr<torch::nn::Module> module, ForwardFunction forward,
                       LossFunction loss)
    : FlatModule(std::move(name), parts_of(module, std::move(forward), std::move(loss))) {
  module_ = std::move(module);
}

FlatModule::FlatModule(std::string name, torch::nn::Sequential net)
    : FlatModule(std::move(name), net.ptr(), [m = net.get()](const torch::Tensor& x) { return m->forward(x); }) {}

FlatModule::FlatModule(std::string name, Parts parts)
    : name_(std::move(name)),
      forward_(std::move(parts.forward)),
      loss_(std::move(parts.loss)),
      set_training_(std::move(parts.set_training)) {
  if (!forward_) throw Error("model " + name_ + ": no forward function given");
  auto trained = bound_parameters(parts.parameters, name_);
  for (const auto& [key, p] : trained) layout_.add(key, p.sizes().vec());
  const auto total = static_cast<int64_t>(layout_.total());
  flat_params_ = torch::empty({total}, torch::kFloat32);
  flat_grads_ = torch::zeros({total}, torch::kFloat32);
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
    accumulators_.push_back(torch::autograd::impl::grad_accumulator(p));
    accumulators_.back()->add_post_hook(std::make_unique<GradientReadyPostHook>(ready_hook_, i));
  }
}

bool FlatModule::set_gradient_ready_hook(GradientReadyHook hook) {
  ready_hook_ = std::move(hook);
  return true;
}

torch::Tensor FlatModule::loss_of(const torch::Tensor& output, const torch::Tensor& labels) const {
  return loss_ ? loss_(output, labels) : cross_entropy(output, labels);
}

float FlatModule::forward_backward(const Batch& batch) {
  if (batch.size() == 0) throw Error(name_ + " model: empty batch");
  try {
    flat_grads_.zero_();
    auto x = input_tensor(batch.features.data(), batch.size(), batch.sample_shape, task_of(batch.label_shape));
    auto y = label_tensor(batch.labels.data(), batch.size(), batch.label_shape);
    auto loss = loss_of(forward_(x), y);
    if (loss.numel() != 1)
      throw Error("model " + name_ + ": the loss has shape " + c10::str(loss.sizes()) + ", not a single value");
    loss.backward();
    return loss.item<float>();
  } catch (...) {
    rethrow_as_one_line(name_);
  }
}

Metrics FlatModule::evaluate(const Dataset& data) {
  torch::NoGradGuard no_grad;
  EvaluationMode eval(set_training_);
  constexpr size_t kChunk = 1000;
  double loss = 0;
  int64_t correct = 0;
  try {
    for (size_t start = 0; start < data.size(); start += kChunk) {
      const size_t n = std::min(kChunk, data.size() - start);
      auto x = input_tensor(data.sample(start).data(), n, data.sample_shape(), data.task());
      auto y = label_tensor(data.targets(start).data(), n, data.label_shape());
      auto out = forward_(x);
      if (loss_) {
        // The loss function gives the mean per target: times the targets, it sums.
        loss += loss_(out, y).item<double>() * static_cast<double>(y.numel());
      } else {
        loss += cross_entropy(out, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
      }
      // A class per target: the largest output over the last dimension ([N, classes] or [N, T, classes]).
      if (out.dim() == y.dim() + 1 && out.sizes().slice(0, static_cast<size_t>(y.dim())).equals(y.sizes()))
        correct += out.argmax(-1).eq(y).sum().item<int64_t>();
    }
  } catch (...) {
    rethrow_as_one_line(name_);
  }
  return Metrics::from_sums(loss, static_cast<size_t>(correct), data.size(), data.size() * data.label_numel());
}

}  // namespace ptrain
