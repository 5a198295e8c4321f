#pragma once
// Stochastic gradient descent, plain or with (Nesterov) momentum, computed as
// torch::optim::SGD does (dampening 0), rounding for rounding (see
// kernel_dispatch.hpp), so that runs agree with LibTorch:
//   d = g + weight_decay * p
//   momentum:  buf = d on the first step, else momentum * buf + d; d = buf
//   nesterov:  the same buf, then d = d + momentum * buf
//   p -= lr * d
#include <cstddef>
#include <span>
#include <vector>

#include "optim/optimizer.hpp"

namespace ptrain {

class SgdOptimizer final : public Optimizer {
 public:
  // config.kind picks the mode (Sgd, Momentum or Nesterov); the config is
  // validated here too, so the class is safe to build without make_optimizer.
  SgdOptimizer(const OptimizerConfig& config, size_t size);

  void step(std::span<float> params, std::span<const float> grad) override;
  void step_slice(size_t offset, std::span<float> params, std::span<const float> grad) override;
  void end_step() override;
  size_t state_slots() const override { return kind_ == OptimizerKind::Sgd ? 0 : 1; }
  void step_with(std::span<float> params, std::span<const float> grad, const OptimizerState& state) const override;
  size_t size() const override { return size_; }
  void set_lr(float lr) override;
  void save_state(StateWriter& out) const override;
  void load_state(StateReader& in) override;

 private:
  const char* name() const;

  OptimizerKind kind_;
  float lr_;
  float momentum_;
  float weight_decay_;
  size_t size_;
  std::vector<float> velocity_;  // empty for plain SGD
  int64_t steps_taken_ = 0;
};

}  // namespace ptrain
