#pragma once
// The optimizers a run can choose (--optimizer, the plan's `optimizer`), each
// with only the options it takes. They all run the kernels of sgd.cpp and
// adam.cpp through OptimizerConfig. Adding one is its options struct and one
// line in the list below.
#include <string_view>

#include "core/fields.hpp"
#include "core/registry.hpp"
#include "optim/optimizer.hpp"

namespace ptrain {

struct SgdOptions {
  static constexpr std::string_view name = "sgd";
  static constexpr std::string_view summary = "plain stochastic gradient descent";
  float lr = 0.01f;
  float weight_decay = 0;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("lr", s.lr, "learning rate", Range::positive());
    visit("weight_decay", s.weight_decay, "L2 penalty added to the gradient", Range::non_negative());
  }
  OptimizerConfig config() const { return {OptimizerKind::Sgd, lr, 0.9f, weight_decay}; }
};

struct MomentumOptions {
  static constexpr std::string_view name = "momentum";
  static constexpr std::string_view summary = "SGD with momentum (dampening 0, as torch.optim.SGD)";
  float lr = 0.01f;
  float momentum = 0.9f;
  float weight_decay = 0;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("lr", s.lr, "learning rate", Range::positive());
    visit("momentum", s.momentum, "momentum factor", Range::unit_interval());
    visit("weight_decay", s.weight_decay, "L2 penalty added to the gradient", Range::non_negative());
  }
  OptimizerConfig config() const { return {OptimizerKind::Momentum, lr, momentum, weight_decay}; }
};

struct NesterovOptions {
  static constexpr std::string_view name = "nesterov";
  static constexpr std::string_view summary = "SGD with Nesterov momentum";
  float lr = 0.01f;
  float momentum = 0.9f;
  float weight_decay = 0;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("lr", s.lr, "learning rate", Range::positive());
    visit("momentum", s.momentum, "momentum factor", Range::unit_interval());
    visit("weight_decay", s.weight_decay, "L2 penalty added to the gradient", Range::non_negative());
  }
  OptimizerConfig config() const { return {OptimizerKind::Nesterov, lr, momentum, weight_decay}; }
};

struct AdamOptions {
  static constexpr std::string_view name = "adam";
  static constexpr std::string_view summary = "Adam (Kingma & Ba), as torch.optim.Adam without amsgrad";
  float lr = 0.001f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("lr", s.lr, "learning rate", Range::positive());
    visit("beta1", s.beta1, "decay of the first moment", Range::unit_interval());
    visit("beta2", s.beta2, "decay of the second moment", Range::unit_interval());
    visit("eps", s.eps, "added to the denominator", Range::positive());
    visit("weight_decay", s.weight_decay, "L2 penalty added to the gradient", Range::non_negative());
  }
  OptimizerConfig config() const {
    OptimizerConfig c{OptimizerKind::Adam, lr, 0.9f, weight_decay};
    c.beta1 = beta1, c.beta2 = beta2, c.eps = eps;
    return c;
  }
};

using OptimizerRegistry = Registry<SgdOptions, MomentumOptions, NesterovOptions, AdamOptions>;
using OptimizerChoice = OptimizerRegistry::Choice;

inline OptimizerConfig optimizer_config(const OptimizerChoice& choice) {
  return std::visit([](const auto& o) { return o.config(); }, choice);
}

}  // namespace ptrain
