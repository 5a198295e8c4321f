#pragma once
// Adam (Kingma & Ba), computed as torch::optim::Adam does with amsgrad off,
// rounding for rounding (see kernel_dispatch.hpp), so that runs agree with LibTorch:
//   g = g + weight_decay * p            (L2 penalty, not AdamW's decoupled decay)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   p -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "optim/optimizer.hpp"

namespace ptrain {

class AdamOptimizer final : public Optimizer {
 public:
  // Validates the config, so the class is safe to build without make_optimizer.
  AdamOptimizer(const OptimizerConfig& config, size_t size);

  void step(std::span<float> params, std::span<const float> grad) override;
  void step_slice(size_t offset, std::span<float> params, std::span<const float> grad) override;
  void end_step() override;
  size_t state_slots() const override { return 2; }
  void step_with(std::span<float> params, std::span<const float> grad, const OptimizerState& state) const override;
  size_t size() const override { return size_; }
  void set_lr(float lr) override;
  void save_state(StateWriter& out) const override;
  void load_state(StateReader& in) override;

 private:
  float lr_;
  float beta1_;
  float beta2_;
  float eps_;
  float weight_decay_;
  size_t size_;
  int64_t steps_taken_ = 0;
  std::vector<float> first_moment_;   // m
  std::vector<float> second_moment_;  // v
};

}  // namespace ptrain
