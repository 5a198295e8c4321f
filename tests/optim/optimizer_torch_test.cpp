// ptrain's optimizers against torch::optim (LibTorch 1.13) on the same
// trajectory: 100 steps on ~1000 floats with a gradient that depends on the
// current parameters, so any drift between the two feeds back into the run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "optim/kernel_dispatch.hpp"
#include "optim/optimizer.hpp"

namespace ptrain {
namespace {

constexpr size_t kParamCount = 1003;  // not a multiple of any vector width, so tails run too
constexpr int kSteps = 100;
// Relative to max(|torch value|, kRelativeFloor), at every step. A parameter
// that crosses zero keeps the absolute rounding error it picked up at |p| ~ 1,
// so this holds only if every rounding matches torch's (see kernel_dispatch.hpp).
constexpr double kTolerance = 1e-6;
constexpr double kRelativeFloor = 1e-3;

// A fixed, smooth, non-quadratic objective plus noise that differs every step:
// grad_i = curvature_i * (p_i - target_i) + 0.1 * p_i^3 + noise(step, i).
class GradientOracle {
 public:
  explicit GradientOracle(uint64_t seed) : seed_(seed) {
    Rng rng(derive_seed(seed, 1));
    for (size_t i = 0; i < kParamCount; ++i) {
      curvature_.push_back(0.5f + 1.5f * rng.uniform());
      target_.push_back(2.0f * rng.uniform() - 1.0f);
    }
  }

  void gradient(int step, std::span<const float> params, std::span<float> grad) const {
    Rng noise(derive_seed(seed_, 100 + static_cast<uint64_t>(step)));
    for (size_t i = 0; i < kParamCount; ++i) {
      const float p = params[i];
      grad[i] = curvature_[i] * (p - target_[i]) + 0.1f * p * p * p + 0.2f * (noise.uniform() - 0.5f);
    }
  }

 private:
  uint64_t seed_;
  std::vector<float> curvature_;
  std::vector<float> target_;
};

std::vector<float> initial_params(uint64_t seed) {
  Rng rng(derive_seed(seed, 2));
  std::vector<float> params(kParamCount);
  for (float& p : params) p = 4.0f * rng.uniform() - 2.0f;
  return params;
}

std::unique_ptr<torch::optim::Optimizer> make_torch_optimizer(const OptimizerConfig& config,
                                                              const torch::Tensor& param) {
  // The float options widen to double exactly as a user's float flags would.
  const std::vector<torch::Tensor> params{param};
  switch (config.kind) {
    case OptimizerKind::Sgd:
    case OptimizerKind::Momentum:
    case OptimizerKind::Nesterov: {
      const double momentum = config.kind == OptimizerKind::Sgd ? 0.0 : config.momentum;
      return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(config.lr)
                                                             .momentum(momentum)
                                                             .nesterov(config.kind == OptimizerKind::Nesterov)
                                                             .weight_decay(config.weight_decay));
    }
    case OptimizerKind::Adam:
      return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(config.lr)
                                                              .betas({config.beta1, config.beta2})
                                                              .eps(config.eps)
                                                              .weight_decay(config.weight_decay));
  }
  return nullptr;
}

struct Comparison {
  double worst_relative_diff = 0.0;
  int worst_step = -1;
  size_t identical_at_end = 0;  // elements equal bit for bit after the last step
  double mean_movement = 0.0;   // mean |p_end - p_start|, to show the run did move
};

Comparison run_both(const OptimizerConfig& config, uint64_t seed) {
  const GradientOracle oracle(seed);
  const std::vector<float> start = initial_params(seed);

  std::vector<float> ours = start;
  auto optimizer = make_optimizer(config, kParamCount);

  torch::Tensor param = torch::tensor(start, torch::kFloat32).set_requires_grad(true);
  auto reference = make_torch_optimizer(config, param);

  Comparison result;
  std::vector<float> grad(kParamCount);
  for (int step = 0; step < kSteps; ++step) {
    oracle.gradient(step, ours, grad);
    optimizer->step(ours, grad);

    const std::span<const float> theirs_before(param.data_ptr<float>(), kParamCount);
    oracle.gradient(step, theirs_before, grad);
    param.mutable_grad() = torch::tensor(grad, torch::kFloat32);
    reference->step();

    const float* theirs = param.data_ptr<float>();
    for (size_t i = 0; i < kParamCount; ++i) {
      const double scale = std::max(std::abs(static_cast<double>(theirs[i])), kRelativeFloor);
      const double diff = std::abs(static_cast<double>(ours[i]) - theirs[i]) / scale;
      if (!(diff <= result.worst_relative_diff)) {  // also catches NaN
        result.worst_relative_diff = diff;
        result.worst_step = step;
      }
    }
  }
  const float* theirs = param.data_ptr<float>();
  for (size_t i = 0; i < kParamCount; ++i) {
    if (ours[i] == theirs[i]) ++result.identical_at_end;
    result.mean_movement += std::abs(ours[i] - start[i]) / static_cast<double>(kParamCount);
  }
  return result;
}

struct MatchCase {
  const char* name;
  OptimizerConfig config;
};

// Keeps CTest's test names short: without it gtest prints the case's bytes.
void PrintTo(const MatchCase& match, std::ostream* out) { *out << match.name; }

MatchCase match_case(const char* name, OptimizerKind kind, float lr, float weight_decay) {
  OptimizerConfig config;
  config.kind = kind;
  config.lr = lr;
  config.weight_decay = weight_decay;
  return {name, config};
}

// Options away from the defaults, to check they reach the arithmetic as torch's do.
MatchCase with_options(MatchCase match, float momentum, float beta1, float beta2, float eps) {
  match.config.momentum = momentum;
  match.config.beta1 = beta1;
  match.config.beta2 = beta2;
  match.config.eps = eps;
  return match;
}

class OptimizerMatchesTorch : public ::testing::TestWithParam<MatchCase> {};

TEST_P(OptimizerMatchesTorch, AgreesOverHundredSteps) {
  // Without AVX2 (or when told to) torch runs its unvectorised kernels, which
  // round fused multiply-adds twice; ours always fuse them, so the runs would
  // differ by design in the last bits.
  const char* torch_capability = std::getenv("ATEN_CPU_CAPABILITY");
  if (!cpu_has_avx2_fma() || (torch_capability != nullptr && std::string(torch_capability) == "default")) {
    GTEST_SKIP() << "LibTorch runs its non-FMA kernels on this host";
  }
  const MatchCase& match = GetParam();
  for (const uint64_t seed : {1u, 2u, 3u}) {
    const Comparison result = run_both(match.config, seed);
    SCOPED_TRACE(::testing::Message()
                 << match.name << " seed=" << seed << ": worst relative diff " << result.worst_relative_diff
                 << " at step " << result.worst_step << ", " << result.identical_at_end << "/" << kParamCount
                 << " identical at the end");
    EXPECT_LE(result.worst_relative_diff, kTolerance);
    EXPECT_GT(result.mean_movement, 0.1);  // the comparison is not of two idle runs
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, OptimizerMatchesTorch,
    ::testing::Values(
        match_case("sgd", OptimizerKind::Sgd, 0.05f, 0.0f),
        match_case("sgd_weight_decay", OptimizerKind::Sgd, 0.05f, 1e-2f),
        match_case("momentum", OptimizerKind::Momentum, 0.01f, 0.0f),
        match_case("momentum_weight_decay", OptimizerKind::Momentum, 0.01f, 1e-2f),
        match_case("nesterov", OptimizerKind::Nesterov, 0.01f, 0.0f),
        match_case("nesterov_weight_decay", OptimizerKind::Nesterov, 0.01f, 1e-2f),
        match_case("adam", OptimizerKind::Adam, 0.01f, 0.0f),
        match_case("adam_weight_decay", OptimizerKind::Adam, 0.01f, 1e-2f),
        with_options(match_case("momentum_other_options", OptimizerKind::Momentum, 0.03f, 1e-3f), 0.7f, 0.9f,
                     0.999f, 1e-8f),
        with_options(match_case("nesterov_other_options", OptimizerKind::Nesterov, 0.03f, 1e-3f), 0.55f, 0.9f,
                     0.999f, 1e-8f),
        with_options(match_case("adam_other_options", OptimizerKind::Adam, 0.003f, 1e-3f), 0.9f, 0.8f, 0.95f,
                     1e-4f)),
    [](const ::testing::TestParamInfo<MatchCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ptrain
