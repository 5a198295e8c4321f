#include "model/torch/flat_module.hpp"

#include "core/error.hpp"

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

torch::Tensor input_tensor(const float* data, size_t count, const std::vector<int64_t>& sample_shape) {
  std::vector<int64_t> shape{static_cast<int64_t>(count)};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  // from_blob does not copy; the batch outlives the forward pass.
  return torch::from_blob(const_cast<float*>(data), shape, torch::kFloat32);
}

}  // namespace

FlatModule::FlatModule(std::string name, torch::nn::Sequential net)
    : name_(std::move(name)), net_(std::move(net)) {
  auto named = net_->named_parameters(/*recurse=*/true);
  for (const auto& item : named) layout_.add(item.key(), item.value().sizes().vec());
  const auto total = static_cast<int64_t>(layout_.total());
  flat_params_ = torch::empty({total}, torch::kFloat32);
  flat_grads_ = torch::zeros({total}, torch::kFloat32);
  torch::NoGradGuard no_grad;
  size_t i = 0;
  for (auto& item : named) {
    const FlatSegment& seg = layout_.segments()[i++];
    auto& p = item.value();
    const auto off = static_cast<int64_t>(seg.offset), n = static_cast<int64_t>(seg.numel);
    auto param_view = flat_params_.narrow(0, off, n).view(seg.shape);
    param_view.copy_(p);
    p.set_data(param_view);
    // A defined .grad makes AccumulateGrad add into it in place, i.e. into the flat buffer.
    p.mutable_grad() = flat_grads_.narrow(0, off, n).view(seg.shape);
    accumulators_.push_back(torch::autograd::impl::grad_accumulator(p));
    accumulators_.back()->add_post_hook(std::make_unique<GradientReadyPostHook>(ready_hook_, i - 1));
  }
}

bool FlatModule::set_gradient_ready_hook(GradientReadyHook hook) {
  ready_hook_ = std::move(hook);
  return true;
}

float FlatModule::forward_backward(const Batch& batch) {
  if (batch.size() == 0) throw Error(name_ + " model: empty batch");
  flat_grads_.zero_();
  auto x = input_tensor(batch.features.data(), batch.size(), batch.sample_shape);
  auto y = torch::from_blob(const_cast<int64_t*>(batch.labels.data()), {static_cast<int64_t>(batch.size())},
                            torch::kInt64);
  auto loss = torch::nn::functional::cross_entropy(net_->forward(x), y);
  loss.backward();
  return loss.item<float>();
}

Metrics FlatModule::evaluate(const Dataset& data) {
  torch::NoGradGuard no_grad;
  constexpr size_t kChunk = 1000;
  double loss = 0;
  int64_t correct = 0;
  for (size_t start = 0; start < data.size(); start += kChunk) {
    const size_t n = std::min(kChunk, data.size() - start);
    auto x = input_tensor(data.sample(start).data(), n, data.sample_shape());
    auto y = torch::from_blob(const_cast<int64_t*>(data.labels().data() + start), {static_cast<int64_t>(n)},
                              torch::kInt64);
    auto out = net_->forward(x);
    loss += torch::nn::functional::cross_entropy(
                out, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                .item<double>();
    correct += out.argmax(1).eq(y).sum().item<int64_t>();
  }
  return Metrics::from_sums(loss, static_cast<size_t>(correct), data.size());
}

}  // namespace ptrain
