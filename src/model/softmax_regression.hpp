#pragma once
// Multinomial logistic regression in plain C++: the native Model used to test
// the layers above the model quickly and without LibTorch.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/fields.hpp"
#include "core/model.hpp"
#include "model/model_input.hpp"
#include "model/model_script.hpp"

namespace ptrain {

struct SoftmaxOptions {
  static constexpr std::string_view name = "softmax";
  static constexpr std::string_view summary = "multinomial logistic regression in plain C++ (no LibTorch)";
  template <class Self, class Visit>
  static void fields(Self&, Visit&&) {}
  std::unique_ptr<Model> make(const ModelInput& input) const;
  // Saving needs LibTorch all the same: the file is a TorchScript module.
  ModelScript script(const ModelInput& input) const;
};

class SoftmaxRegression : public Model {
 public:
  // Weights drawn uniformly from +-1/sqrt(features) (as torch's Linear), bias 0.
  SoftmaxRegression(size_t features, int classes, uint64_t seed);

  std::string name() const override { return "softmax"; }
  const FlatLayout& layout() const override { return layout_; }
  std::span<float> params() override { return params_; }
  std::span<float> grads() override { return grads_; }
  float forward_backward(const Batch& batch) override;
  Metrics evaluate(const Dataset& data) override;

 private:
  // Softmax probabilities of one sample into probs_; returns the row's max-shifted log-sum-exp.
  float probabilities(const float* x);

  size_t features_;
  int classes_;
  FlatLayout layout_;
  std::vector<float> params_;  // weight [classes x features], then bias [classes]
  std::vector<float> grads_;
  std::vector<float> probs_;
};

}  // namespace ptrain
