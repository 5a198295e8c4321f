#include "optim/sgd.hpp"

#include <cmath>

#include "core/error.hpp"
#include "optim/kernel_dispatch.hpp"
#include "optim/step_checks.hpp"

namespace ptrain {

namespace {

// Everything one step needs, so that the kernels are free functions.
struct SgdStep {
  float* params;
  const float* grad;
  float* velocity;
  size_t size;
  float neg_lr;
  float momentum;
  float weight_decay;
  bool decays;      // torch skips the weight-decay term when it is 0
  bool first_step;  // torch starts the velocity as a copy of the first direction
};

// torch's float operations in its order and rounding (see kernel_dispatch.hpp):
// std::fma where its kernels fuse (add with alpha: g + wd * p, d + momentum *
// buf, p - lr * d), two roundings where it makes two passes
// (buf.mul_(momentum).add_(d)).
template <OptimizerKind kind>
[[gnu::always_inline]] inline void sgd_loop(const SgdStep& step) {
  for (size_t i = 0; i < step.size; ++i) {
    float direction = step.grad[i];
    if (step.decays) direction = std::fma(step.weight_decay, step.params[i], direction);
    if constexpr (kind != OptimizerKind::Sgd) {
      if (step.first_step) {
        step.velocity[i] = direction;
      } else {
        const float decayed = step.momentum * step.velocity[i];
        step.velocity[i] = decayed + direction;
      }
      if constexpr (kind == OptimizerKind::Nesterov) {
        direction = std::fma(step.momentum, step.velocity[i], direction);
      } else {
        direction = step.velocity[i];
      }
    }
    step.params[i] = std::fma(step.neg_lr, direction, step.params[i]);
  }
}

[[gnu::always_inline]] inline void sgd_dispatch(OptimizerKind kind, const SgdStep& caller_step) {
  // A local copy: the compiler then knows the stores to the buffers cannot
  // change the step's fields, and keeps them in registers.
  const SgdStep step = caller_step;
  switch (kind) {
    case OptimizerKind::Momentum:
      sgd_loop<OptimizerKind::Momentum>(step);
      break;
    case OptimizerKind::Nesterov:
      sgd_loop<OptimizerKind::Nesterov>(step);
      break;
    default:
      sgd_loop<OptimizerKind::Sgd>(step);
      break;
  }
}

[[PTRAIN_OPTIM_NO_CONTRACTION]] void sgd_portable(OptimizerKind kind, const SgdStep& step) {
  sgd_dispatch(kind, step);
}

#if defined(PTRAIN_OPTIM_AVX2_FMA_KERNELS)
[[gnu::target("avx2,fma"), PTRAIN_OPTIM_NO_CONTRACTION]] void sgd_avx2_fma(OptimizerKind kind,
                                                                           const SgdStep& step) {
  sgd_dispatch(kind, step);
}
#endif

}  // namespace

SgdOptimizer::SgdOptimizer(const OptimizerConfig& config, size_t size)
    : kind_(config.kind),
      lr_(config.lr),
      momentum_(config.momentum),
      weight_decay_(config.weight_decay),
      size_(size) {
  if (kind_ == OptimizerKind::Adam) throw Error("SgdOptimizer cannot run the adam optimizer");
  validate_optimizer_config(config);
  if (kind_ != OptimizerKind::Sgd) velocity_.assign(size_, 0.0f);
}

// A literal rather than to_string(), so that step() never builds a string.
const char* SgdOptimizer::name() const {
  switch (kind_) {
    case OptimizerKind::Momentum:
      return "momentum";
    case OptimizerKind::Nesterov:
      return "nesterov";
    default:
      return "sgd";
  }
}

void SgdOptimizer::set_lr(float lr) { lr_ = checked_scheduled_lr(name(), lr); }

void SgdOptimizer::save_state(StateWriter& out) const {
  out.put_text("optimizer", name());
  out.put_value("optimizer.steps", steps_taken_);
  out.put_value("optimizer.lr", lr_);
  out.put("optimizer.velocity", velocity_);
}

void SgdOptimizer::load_state(StateReader& in) {
  check_state_kind(in, name());
  steps_taken_ = take_step_count(in);
  // The learning rate is the plan's: a resumed run (or a rollback) may lower it.
  take_lr(in);
  in.take("optimizer.velocity", std::span<float>(velocity_));
}

void SgdOptimizer::step(std::span<float> params, std::span<const float> grad) {
  check_step_sizes(name(), size_, params.size(), grad.size());
  step_slice(0, params, grad);
  end_step();
}

void SgdOptimizer::step_slice(size_t offset, std::span<float> params, std::span<const float> grad) {
  check_slice_sizes(name(), size_, offset, params.size(), grad.size());
  step_with(params, grad, OptimizerState{{velocity_.empty() ? nullptr : velocity_.data() + offset, nullptr}, steps_taken_});
}

void SgdOptimizer::end_step() { ++steps_taken_; }

void SgdOptimizer::step_with(std::span<float> params, std::span<const float> grad,
                             const OptimizerState& state) const {
  check_step_sizes(name(), params.size(), params.size(), grad.size());
  if (kind_ != OptimizerKind::Sgd && state.slots[0] == nullptr && !params.empty())
    throw Error(std::string(name()) + " optimizer: no velocity given to step_with");
  const SgdStep step{
      .params = params.data(),
      .grad = grad.data(),
      .velocity = state.slots[0],
      .size = params.size(),
      .neg_lr = -(lr_ * state.lr_scale),
      .momentum = momentum_,
      .weight_decay = weight_decay_,
      .decays = weight_decay_ != 0.0f,
      .first_step = state.steps_before == 0,
  };
#if defined(PTRAIN_OPTIM_AVX2_FMA_KERNELS)
  if (cpu_has_avx2_fma()) {
    sgd_avx2_fma(kind_, step);
    return;
  }
#endif
  sgd_portable(kind_, step);
}

}  // namespace ptrain
