#include "model/softmax_regression.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/timeline.hpp"

namespace ptrain {

std::unique_ptr<Model> SoftmaxOptions::make(const ModelInput& input) const {
  if (!input.label_shape.empty())
    throw Error("model softmax: classifies one label per sample; this data set has a target per position");
  size_t features = 1;
  for (int64_t d : input.sample_shape) features *= static_cast<size_t>(d);
  return std::make_unique<SoftmaxRegression>(features, input.classes, input.seed);
}

ModelScript SoftmaxOptions::script(const ModelInput&) const {
  // torch.linear sums in BLAS's order, not the loop's below: the logits agree to rounding.
  ModelScript s;
  s.class_name = "Softmax";
  s.parameters = {"weight", "bias"};
  s.forward =
      "def forward(self, x: Tensor) -> Tensor:\n"
      "    return torch.linear(x.flatten(1), self.weight, self.bias)\n";
  return s;
}

SoftmaxRegression::SoftmaxRegression(size_t features, int classes, uint64_t seed)
    : features_(features), classes_(classes), probs_(static_cast<size_t>(classes)) {
  if (features == 0 || classes <= 0) throw Error("softmax model: needs features and classes");
  const auto c = static_cast<int64_t>(classes), d = static_cast<int64_t>(features);
  layout_.add("weight", {c, d});
  layout_.add("bias", {c});
  params_.assign(layout_.total(), 0.0f);
  grads_.assign(layout_.total(), 0.0f);
  Rng rng(seed);
  const float bound = 1.0f / std::sqrt(static_cast<float>(features));
  for (size_t i = 0; i < features * static_cast<size_t>(classes); ++i)
    params_[i] = (2.0f * rng.uniform() - 1.0f) * bound;
}

float SoftmaxRegression::probabilities(const float* x) {
  const float* w = params_.data();
  const float* b = params_.data() + features_ * static_cast<size_t>(classes_);
  float top = -INFINITY;
  for (int k = 0; k < classes_; ++k) {
    const float* row = w + static_cast<size_t>(k) * features_;
    float z = b[k];
    for (size_t j = 0; j < features_; ++j) z += row[j] * x[j];
    probs_[static_cast<size_t>(k)] = z;
    top = std::max(top, z);
  }
  float total = 0;
  for (float& p : probs_) total += (p = std::exp(p - top));
  for (float& p : probs_) p /= total;
  return top + std::log(total);
}

float SoftmaxRegression::forward_backward(const Batch& batch) {
  if (batch.size() == 0) throw Error("softmax model: empty batch");
  if (batch.features.size() != batch.size() * features_)
    throw Error("softmax model: batch samples do not have " + std::to_string(features_) + " features");
  TimelineSpan span("forward and backward");  // one loop does both
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  float* gw = grads_.data();
  float* gb = grads_.data() + features_ * static_cast<size_t>(classes_);
  const float inv_n = 1.0f / static_cast<float>(batch.size());
  double loss = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const float* x = batch.features.data() + i * features_;
    probabilities(x);
    const auto y = static_cast<size_t>(batch.labels[i]);
    loss -= std::log(std::max(probs_[y], 1e-30f));
    for (size_t k = 0; k < static_cast<size_t>(classes_); ++k) {
      const float delta = (probs_[k] - (k == y ? 1.0f : 0.0f)) * inv_n;
      float* row = gw + k * features_;
      for (size_t j = 0; j < features_; ++j) row[j] += delta * x[j];
      gb[k] += delta;
    }
  }
  return static_cast<float>(loss / static_cast<double>(batch.size()));
}

Metrics SoftmaxRegression::evaluate(const Dataset& data) {
  double loss = 0;
  size_t correct = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    probabilities(data.sample(i).data());
    const auto y = static_cast<size_t>(data.label(i));
    loss -= std::log(std::max(probs_[y], 1e-30f));
    const auto best = static_cast<size_t>(std::max_element(probs_.begin(), probs_.end()) - probs_.begin());
    correct += best == y;
  }
  return Metrics::from_sums(loss, static_cast<size_t>(correct), data.size());
}

}  // namespace ptrain
