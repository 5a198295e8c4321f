#include "optim/adam.hpp"

#include <cmath>

#include "core/error.hpp"
#include "optim/kernel_dispatch.hpp"
#include "optim/step_checks.hpp"

#if defined(PTRAIN_OPTIM_AVX2_FMA_KERNELS)
#include <immintrin.h>
#endif

namespace ptrain {

namespace {

// Everything one step needs; the scalars are already rounded to float where
// torch rounds them.
struct AdamStep {
  float* params;
  const float* grad;
  float* first_moment;
  float* second_moment;
  size_t size;
  float first_decay;   // beta1
  float first_gain;    // 1 - beta1, worked out in double
  float second_decay;  // beta2
  float second_gain;   // 1 - beta2, worked out in double
  float sqrt_bias_correction2;
  float eps;
  float neg_step_size;  // -lr / (1 - beta1^t), worked out in double
  float weight_decay;
  bool decays;  // torch skips the weight-decay term when it is 0
};

// One element, with torch's float operations in its order and rounding (see
// kernel_dispatch.hpp): std::fma where its kernels fuse (add with alpha,
// addcmul), one rounding per operation elsewhere (mul_, div, add, addcdiv).
[[gnu::always_inline]] inline void adam_element(const AdamStep& s, size_t i) {
  float g = s.grad[i];
  if (s.decays) g = std::fma(s.weight_decay, s.params[i], g);
  const float decayed_m = s.first_decay * s.first_moment[i];
  const float m = std::fma(s.first_gain, g, decayed_m);
  const float decayed_v = s.second_decay * s.second_moment[i];
  const float scaled_g = s.second_gain * g;
  const float v = std::fma(scaled_g, g, decayed_v);
  const float root_v = std::sqrt(v);
  const float denom = root_v / s.sqrt_bias_correction2 + s.eps;
  const float scaled_m = s.neg_step_size * m;
  s.first_moment[i] = m;
  s.second_moment[i] = v;
  s.params[i] += scaled_m / denom;
}

[[PTRAIN_OPTIM_NO_CONTRACTION]] void adam_portable(const AdamStep& caller_step) {
  const AdamStep s = caller_step;  // a local copy, so stores cannot alias its fields
  for (size_t i = 0; i < s.size; ++i) adam_element(s, i);
}

#if defined(PTRAIN_OPTIM_AVX2_FMA_KERNELS)
// adam_element eight at a time, instruction for instruction. Written with
// intrinsics because std::sqrt may set errno, which keeps the compiler from
// vectorising a loop that calls it.
[[gnu::target("avx2,fma"), PTRAIN_OPTIM_NO_CONTRACTION]] void adam_avx2_fma(const AdamStep& caller_step) {
  const AdamStep s = caller_step;  // a local copy, so stores cannot alias its fields
  const __m256 weight_decay = _mm256_set1_ps(s.weight_decay);
  const __m256 first_decay = _mm256_set1_ps(s.first_decay);
  const __m256 first_gain = _mm256_set1_ps(s.first_gain);
  const __m256 second_decay = _mm256_set1_ps(s.second_decay);
  const __m256 second_gain = _mm256_set1_ps(s.second_gain);
  const __m256 sqrt_bias_correction2 = _mm256_set1_ps(s.sqrt_bias_correction2);
  const __m256 eps = _mm256_set1_ps(s.eps);
  const __m256 neg_step_size = _mm256_set1_ps(s.neg_step_size);
  size_t i = 0;
  for (; i + 8 <= s.size; i += 8) {
    const __m256 p = _mm256_loadu_ps(s.params + i);
    __m256 g = _mm256_loadu_ps(s.grad + i);
    if (s.decays) g = _mm256_fmadd_ps(weight_decay, p, g);
    const __m256 decayed_m = _mm256_mul_ps(first_decay, _mm256_loadu_ps(s.first_moment + i));
    const __m256 m = _mm256_fmadd_ps(first_gain, g, decayed_m);
    const __m256 decayed_v = _mm256_mul_ps(second_decay, _mm256_loadu_ps(s.second_moment + i));
    const __m256 v = _mm256_fmadd_ps(_mm256_mul_ps(second_gain, g), g, decayed_v);
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(v), sqrt_bias_correction2), eps);
    const __m256 update = _mm256_div_ps(_mm256_mul_ps(neg_step_size, m), denom);
    _mm256_storeu_ps(s.first_moment + i, m);
    _mm256_storeu_ps(s.second_moment + i, v);
    _mm256_storeu_ps(s.params + i, _mm256_add_ps(p, update));
  }
  for (; i < s.size; ++i) adam_element(s, i);
}
#endif

}  // namespace

AdamOptimizer::AdamOptimizer(const OptimizerConfig& config, size_t size)
    : lr_(config.lr),
      beta1_(config.beta1),
      beta2_(config.beta2),
      eps_(config.eps),
      weight_decay_(config.weight_decay),
      size_(size) {
  validate_optimizer_config(config);
  first_moment_.assign(size_, 0.0f);
  second_moment_.assign(size_, 0.0f);
}

void AdamOptimizer::set_lr(float lr) { lr_ = checked_scheduled_lr("adam", lr); }

void AdamOptimizer::save_state(StateWriter& out) const {
  out.put_text("optimizer", "adam");
  out.put_value("optimizer.steps", steps_taken_);
  out.put_value("optimizer.lr", lr_);
  out.put("optimizer.m", first_moment_);
  out.put("optimizer.v", second_moment_);
}

void AdamOptimizer::load_state(StateReader& in) {
  check_state_kind(in, "adam");
  steps_taken_ = take_step_count(in);
  // The learning rate is the plan's: a resumed run (or a rollback) may lower it.
  take_lr(in);
  in.take("optimizer.m", std::span<float>(first_moment_));
  in.take("optimizer.v", std::span<float>(second_moment_));
}

void AdamOptimizer::step(std::span<float> params, std::span<const float> grad) {
  check_step_sizes("adam", size_, params.size(), grad.size());
  step_slice(0, params, grad);
  end_step();
}

void AdamOptimizer::step_slice(size_t offset, std::span<float> params, std::span<const float> grad) {
  check_slice_sizes("adam", size_, offset, params.size(), grad.size());
  step_with(params, grad, OptimizerState{{first_moment_.data() + offset, second_moment_.data() + offset}, steps_taken_});
}

void AdamOptimizer::end_step() { ++steps_taken_; }

void AdamOptimizer::step_with(std::span<float> params, std::span<const float> grad,
                              const OptimizerState& state) const {
  check_step_sizes("adam", params.size(), params.size(), grad.size());
  if ((state.slots[0] == nullptr || state.slots[1] == nullptr) && !params.empty())
    throw Error("adam optimizer: no moments given to step_with");
  const int64_t step_number = state.steps_before + 1;

  // torch holds its options as doubles and works out the per-step scalars in
  // double, rounding each to float only where it meets a float tensor; so do
  // we ((float)(1 - 0.9) and 1 - 0.9f differ in the last bit).
  const double beta1 = beta1_;
  const double beta2 = beta2_;
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step_number));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step_number));
  const AdamStep step{
      .params = params.data(),
      .grad = grad.data(),
      .first_moment = state.slots[0],
      .second_moment = state.slots[1],
      .size = params.size(),
      .first_decay = beta1_,
      .first_gain = static_cast<float>(1.0 - beta1),
      .second_decay = beta2_,
      .second_gain = static_cast<float>(1.0 - beta2),
      .sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2)),
      .eps = eps_,
      .neg_step_size = static_cast<float>(-(static_cast<double>(lr_ * state.lr_scale) / bias_correction1)),
      .weight_decay = weight_decay_,
      .decays = weight_decay_ != 0.0f,
  };
#if defined(PTRAIN_OPTIM_AVX2_FMA_KERNELS)
  if (cpu_has_avx2_fma()) {
    adam_avx2_fma(step);
    return;
  }
#endif
  adam_portable(step);
}

}  // namespace ptrain
