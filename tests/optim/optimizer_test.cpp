// The optimizers without LibTorch: option parsing and validation, size checks,
// hand-worked first steps, and convergence on a quadratic. Agreement with
// torch::optim is in optimizer_torch_test.cpp.
#include "optim/optimizer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/state_stream.hpp"
#include "optim/adam.hpp"
#include "optim/sgd.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

const OptimizerKind kAllKinds[] = {OptimizerKind::Sgd, OptimizerKind::Momentum, OptimizerKind::Nesterov,
                                   OptimizerKind::Adam};

OptimizerConfig config_for(OptimizerKind kind, float lr) {
  OptimizerConfig config;
  config.kind = kind;
  config.lr = lr;
  return config;
}

TEST(OptimizerKind, NamesEveryKind) {
  EXPECT_EQ(to_string(OptimizerKind::Sgd), "sgd");
  EXPECT_EQ(to_string(OptimizerKind::Momentum), "momentum");
  EXPECT_EQ(to_string(OptimizerKind::Nesterov), "nesterov");
  EXPECT_EQ(to_string(OptimizerKind::Adam), "adam");
}

TEST(MakeOptimizer, NamesTheBadOptionAndItsValue) {
  OptimizerConfig config;
  config.lr = -0.1f;
  EXPECT_EQ(test::error_message([&] { make_optimizer(config, 4); }), "optimizer.lr must be > 0 (got -0.1)");
}

TEST(MakeOptimizer, RejectsEachOutOfRangeOption) {
  struct BadOption {
    const char* field;
    void (*spoil)(OptimizerConfig&);
  };
  const BadOption bad_options[] = {
      {"optimizer.lr", [](OptimizerConfig& c) { c.lr = 0.0f; }},
      {"optimizer.lr", [](OptimizerConfig& c) { c.lr = std::numeric_limits<float>::quiet_NaN(); }},
      {"optimizer.lr", [](OptimizerConfig& c) { c.lr = std::numeric_limits<float>::infinity(); }},
      {"optimizer.momentum", [](OptimizerConfig& c) { c.momentum = 1.0f; }},
      {"optimizer.momentum", [](OptimizerConfig& c) { c.momentum = -0.5f; }},
      {"optimizer.weight_decay", [](OptimizerConfig& c) { c.weight_decay = -1e-4f; }},
      {"optimizer.weight_decay", [](OptimizerConfig& c) { c.weight_decay = std::numeric_limits<float>::infinity(); }},
      {"optimizer.beta1", [](OptimizerConfig& c) { c.beta1 = 1.0f; }},
      {"optimizer.beta1", [](OptimizerConfig& c) { c.beta1 = -0.1f; }},
      {"optimizer.beta2", [](OptimizerConfig& c) { c.beta2 = 1.5f; }},
      {"optimizer.beta2", [](OptimizerConfig& c) { c.beta2 = std::numeric_limits<float>::quiet_NaN(); }},
      {"optimizer.eps", [](OptimizerConfig& c) { c.eps = 0.0f; }},
      {"optimizer.eps", [](OptimizerConfig& c) { c.eps = -1e-8f; }},
  };
  for (const OptimizerKind kind : kAllKinds) {
    for (const BadOption& bad : bad_options) {
      OptimizerConfig config = config_for(kind, 0.01f);
      bad.spoil(config);
      const std::string message = test::error_message([&] { make_optimizer(config, 8); });
      SCOPED_TRACE(to_string(kind) + ": " + message);
      EXPECT_EQ(message.rfind(std::string(bad.field) + " must be", 0), 0u);
      EXPECT_NE(message.find("(got "), std::string::npos);
      EXPECT_EQ(message.find('\n'), std::string::npos);
    }
  }
}

TEST(MakeOptimizer, AcceptsEdgesOfTheValidRanges) {
  OptimizerConfig config = config_for(OptimizerKind::Momentum, 1e-6f);
  config.momentum = 0.0f;
  config.weight_decay = 0.0f;
  config.beta1 = 0.0f;
  config.beta2 = 0.0f;
  config.eps = std::numeric_limits<float>::denorm_min();
  for (const OptimizerKind kind : kAllKinds) {
    config.kind = kind;
    auto optimizer = make_optimizer(config, 3);
    EXPECT_EQ(optimizer->size(), 3u);
  }
}

TEST(MakeOptimizer, ConcreteClassesValidateToo) {
  OptimizerConfig config = config_for(OptimizerKind::Sgd, 0.1f);
  config.momentum = 2.0f;
  EXPECT_THROW(SgdOptimizer(config, 2), Error);
  config = config_for(OptimizerKind::Adam, 0.1f);
  config.eps = 0.0f;
  EXPECT_THROW(AdamOptimizer(config, 2), Error);
  EXPECT_THROW(SgdOptimizer(config_for(OptimizerKind::Adam, 0.1f), 2), Error);
}

TEST(OptimizerStep, RejectsSpansOfTheWrongSizeLeavingParamsAlone) {
  for (const OptimizerKind kind : kAllKinds) {
    auto optimizer = make_optimizer(config_for(kind, 0.1f), 4);
    std::vector<float> params{1, 2, 3, 4};
    std::vector<float> short_params{1, 2, 3};
    const std::vector<float> grad{1, 1, 1, 1};
    const std::vector<float> long_grad{1, 1, 1, 1, 1};
    const std::string message = test::error_message([&] { optimizer->step(params, long_grad); });
    EXPECT_NE(message.find(to_string(kind)), std::string::npos) << message;
    EXPECT_NE(message.find('4'), std::string::npos) << message;
    EXPECT_NE(message.find('5'), std::string::npos) << message;
    EXPECT_THROW(optimizer->step(short_params, grad), Error);
    EXPECT_THROW(optimizer->step(std::span<float>(), std::span<const float>()), Error);
    EXPECT_EQ(params, (std::vector<float>{1, 2, 3, 4}));
    EXPECT_EQ(short_params, (std::vector<float>{1, 2, 3}));
  }
}

TEST(OptimizerStep, EmptyOptimizerStepsNothing) {
  for (const OptimizerKind kind : kAllKinds) {
    auto optimizer = make_optimizer(config_for(kind, 0.1f), 0);
    EXPECT_NO_THROW(optimizer->step(std::span<float>(), std::span<const float>()));
  }
}

TEST(OptimizerSetLr, RejectsNegativeAndNonFiniteAndZeroFreezes) {
  for (const OptimizerKind kind : kAllKinds) {
    auto optimizer = make_optimizer(config_for(kind, 0.1f), 2);
    EXPECT_THROW(optimizer->set_lr(-0.1f), Error);
    EXPECT_THROW(optimizer->set_lr(std::numeric_limits<float>::quiet_NaN()), Error);
    EXPECT_THROW(optimizer->set_lr(std::numeric_limits<float>::infinity()), Error);
    optimizer->set_lr(0.0f);
    std::vector<float> params{1.5f, -2.0f};
    const std::vector<float> grad{0.3f, -0.7f};
    optimizer->step(params, grad);
    EXPECT_EQ(params, (std::vector<float>{1.5f, -2.0f})) << to_string(kind);
  }
}

TEST(OptimizerSetLr, TakesEffectOnTheNextStep) {
  auto optimizer = make_optimizer(config_for(OptimizerKind::Sgd, 0.5f), 1);
  std::vector<float> params{0.0f};
  const std::vector<float> grad{1.0f};
  optimizer->step(params, grad);
  EXPECT_FLOAT_EQ(params[0], -0.5f);
  optimizer->set_lr(0.25f);
  optimizer->step(params, grad);
  EXPECT_FLOAT_EQ(params[0], -0.75f);
}

// Two steps of each SGD mode on a constant gradient, worked out by hand:
// with lr 0.1, momentum 0.9, g = 1 the velocity goes 1, 1.9.
TEST(SgdOptimizer, FirstStepsMatchHandWorkedValues) {
  struct Expected {
    OptimizerKind kind;
    float after_one;
    float after_two;
  };
  const Expected cases[] = {
      {OptimizerKind::Sgd, -0.1f, -0.2f},
      {OptimizerKind::Momentum, -0.1f, -0.1f - 0.19f},
      {OptimizerKind::Nesterov, -0.19f, -0.19f - 0.271f},  // d + 0.9 * buf
  };
  for (const Expected& expected : cases) {
    auto optimizer = make_optimizer(config_for(expected.kind, 0.1f), 1);
    std::vector<float> params{0.0f};
    const std::vector<float> grad{1.0f};
    optimizer->step(params, grad);
    EXPECT_NEAR(params[0], expected.after_one, 1e-6f) << to_string(expected.kind);
    optimizer->step(params, grad);
    EXPECT_NEAR(params[0], expected.after_two, 1e-6f) << to_string(expected.kind);
  }
}

TEST(SgdOptimizer, WeightDecayPullsTowardsZero) {
  OptimizerConfig config = config_for(OptimizerKind::Sgd, 0.5f);
  config.weight_decay = 0.1f;
  auto optimizer = make_optimizer(config, 2);
  std::vector<float> params{1.0f, -2.0f};
  const std::vector<float> grad{0.0f, 0.0f};
  optimizer->step(params, grad);
  EXPECT_FLOAT_EQ(params[0], 0.95f);
  EXPECT_FLOAT_EQ(params[1], -1.9f);
}

// Bias correction makes Adam's first step lr * g / (|g| + eps') ~ lr * sign(g)
// whatever the gradient's scale.
TEST(AdamOptimizer, FirstStepIsLrTimesSignOfGradient) {
  auto optimizer = make_optimizer(config_for(OptimizerKind::Adam, 0.01f), 3);
  std::vector<float> params{1.0f, 1.0f, 1.0f};
  const std::vector<float> grad{3.0f, -0.02f, 500.0f};
  optimizer->step(params, grad);
  EXPECT_NEAR(params[0], 0.99f, 1e-6f);
  EXPECT_NEAR(params[1], 1.01f, 1e-6f);
  EXPECT_NEAR(params[2], 0.99f, 1e-6f);
}

// `steps` steps of `whole` from parameters drawn in [-1, 1), each gradient
// the parameters plus noise; `other` takes the same gradients on its own copy
// of the starting parameters. Returns both parameter vectors.
struct SideBySide {
  std::vector<float> whole, other;
};
SideBySide step_side_by_side(Optimizer& whole, size_t size, int steps, uint64_t seed,
                             const std::function<void(std::span<float>, std::span<const float>)>& other) {
  Rng rng(seed);
  SideBySide run{std::vector<float>(size), {}};
  for (float& p : run.whole) p = 2.0f * rng.uniform() - 1.0f;
  run.other = run.whole;
  std::vector<float> grad(size);
  for (int step = 0; step < steps; ++step) {
    for (size_t i = 0; i < size; ++i) grad[i] = run.whole[i] + 0.5f * (rng.uniform() - 0.5f);
    whole.step(run.whole, grad);
    other(run.other, grad);
  }
  return run;
}

// Each optimizer runs a vectorised body and a scalar tail (and, on hosts
// without AVX2+FMA, a portable loop); all must compute the same bits, so a
// buffer of n steps exactly as n buffers of one element do.
TEST(OptimizerStep, EveryElementIsUpdatedAlikeWhateverItsPosition) {
  constexpr size_t kSize = 37;
  for (const OptimizerKind kind : kAllKinds) {
    OptimizerConfig config = config_for(kind, 0.01f);
    config.weight_decay = 0.01f;
    auto whole = make_optimizer(config, kSize);
    std::vector<std::unique_ptr<Optimizer>> singles;
    for (size_t i = 0; i < kSize; ++i) singles.push_back(make_optimizer(config, 1));
    const auto run = step_side_by_side(*whole, kSize, 20, 7, [&](std::span<float> params, std::span<const float> grad) {
      for (size_t i = 0; i < kSize; ++i) singles[i]->step(params.subspan(i, 1), grad.subspan(i, 1));
    });
    EXPECT_EQ(run.whole, run.other) << to_string(kind);
  }
}

// The hybrid strategy updates a bucket at a time (step_slice on each, then
// end_step): the same bits as one step over the whole buffer, whatever the
// slices and their order, and the step count (Adam's bias correction) moves
// once a step.
TEST(OptimizerStep, SlicesCoveringTheBufferOnceGiveTheWholeStep) {
  constexpr size_t kSize = 53;
  const std::vector<std::pair<size_t, size_t>> slices = {{40, 13}, {17, 23}, {0, 0}, {0, 17}};  // last to first
  for (const OptimizerKind kind : kAllKinds) {
    OptimizerConfig config = config_for(kind, 0.01f);
    config.weight_decay = 0.01f;
    auto whole = make_optimizer(config, kSize);
    auto sliced = make_optimizer(config, kSize);
    const auto run = step_side_by_side(*whole, kSize, 12, 11, [&](std::span<float> params, std::span<const float> grad) {
      for (const auto& [offset, count] : slices)
        sliced->step_slice(offset, params.subspan(offset, count), grad.subspan(offset, count));
      sliced->end_step();
    });
    EXPECT_EQ(run.whole, run.other) << to_string(kind);
    StateWriter whole_state, sliced_state;
    whole->save_state(whole_state);
    sliced->save_state(sliced_state);
    EXPECT_EQ(whole_state.bytes(), sliced_state.bytes()) << to_string(kind) << ": the state, step count included";
  }
}

TEST(OptimizerStep, RejectsASliceOutsideTheBufferLeavingParamsAlone) {
  for (const OptimizerKind kind : kAllKinds) {
    auto optimizer = make_optimizer(config_for(kind, 0.1f), 4);
    std::vector<float> params{1, 2, 3, 4};
    const std::vector<float> grad{1, 1, 1, 1};
    const std::string message = test::error_message(
        [&] { optimizer->step_slice(2, std::span<float>(params).subspan(0, 3), std::span<const float>(grad).subspan(0, 3)); });
    EXPECT_NE(message.find(to_string(kind)), std::string::npos) << message;
    EXPECT_NE(message.find("slice of 3 parameters at 2"), std::string::npos) << message;
    EXPECT_THROW(optimizer->step_slice(5, std::span<float>(), std::span<const float>()), Error);
    EXPECT_THROW(optimizer->step_slice(0, std::span<float>(params).subspan(0, 2), std::span<const float>(grad)), Error);
    EXPECT_EQ(params, (std::vector<float>{1, 2, 3, 4}));
  }
}

// Found by fuzz/checkpoint_fuzz: the optimizer a damaged state names went
// into the error as it was, so a newline in it split the one-line message.
TEST(OptimizerState, RefusesAnotherKindsStateNamingItOnOneLine) {
  StateWriter w;
  w.put_text("optimizer", "ad\nam");
  const auto bytes = w.take();
  StateReader in(bytes, "ckpt");
  const auto sgd = make_optimizer(config_for(OptimizerKind::Sgd, 0.1f), 3);
  EXPECT_EQ(test::error_message([&] { sgd->load_state(in); }),
            "ckpt: the state is of the ad\\x0aam optimizer, this run's is sgd");
}

// Found with fuzz/checkpoint_fuzz (an input made for it): a state whose step
// count was the largest int64 overflowed (undefined behaviour) at the next
// step; a negative count or a learning rate set_lr refuses was taken as it was.
TEST(OptimizerState, RefusesAStepCountOrLearningRateNoRunSaves) {
  for (const OptimizerKind kind : {OptimizerKind::Sgd, OptimizerKind::Adam}) {
    const auto optimizer = make_optimizer(config_for(kind, 0.1f), 2);
    const auto state = [&](int64_t steps, float lr) {
      StateWriter w;
      w.put_text("optimizer", kind == OptimizerKind::Sgd ? "sgd" : "adam");
      w.put_value("optimizer.steps", steps);
      w.put_value("optimizer.lr", lr);
      return w.take();
    };
    const auto error = [&](int64_t steps, float lr) {
      const auto bytes = state(steps, lr);
      StateReader in(bytes, "ckpt");
      return test::error_message([&] { optimizer->load_state(in); });
    };
    EXPECT_EQ(error(std::numeric_limits<int64_t>::max(), 0.1f),
              "ckpt: the optimizer's state counts 9223372036854775807 steps (a run takes from 0 to below "
              "9007199254740992)");
    EXPECT_EQ(error(int64_t{1} << 53, 0.1f),
              "ckpt: the optimizer's state counts 9007199254740992 steps (a run takes from 0 to below "
              "9007199254740992)");
    EXPECT_EQ(error(-1, 0.1f),
              "ckpt: the optimizer's state counts -1 steps (a run takes from 0 to below 9007199254740992)");
    EXPECT_EQ(error(5, std::numeric_limits<float>::quiet_NaN()),
              "ckpt: the optimizer's learning rate is nan (it must be finite and >= 0)");
    EXPECT_EQ(error(5, -0.5f), "ckpt: the optimizer's learning rate is -0.5 (it must be finite and >= 0)");
    // The edges a run may save load (up to the first record after them).
    EXPECT_NE(error((int64_t{1} << 53) - 1, 0.0f).find("truncated"), std::string::npos);
  }
}

// f(p) = sum_i 0.5 * curvature_i * (p_i - target_i)^2, which every optimizer
// should drive to its minimum. Adam's steps stay ~lr long near the minimum, so
// it gets a decaying schedule (which exercises set_lr too).
TEST(OptimizerConvergence, QuadraticReachesItsMinimum) {
  constexpr size_t kSize = 100;
  Rng rng(11);
  std::vector<float> curvature(kSize);
  std::vector<float> target(kSize);
  for (size_t i = 0; i < kSize; ++i) {
    curvature[i] = 0.5f + rng.uniform();
    target[i] = 4.0f * rng.uniform() - 2.0f;
  }
  struct Case {
    OptimizerKind kind;
    float lr;
    float lr_decay;  // per step
    int steps;
  };
  const Case cases[] = {{OptimizerKind::Sgd, 0.3f, 1.0f, 200},
                        {OptimizerKind::Momentum, 0.05f, 1.0f, 300},
                        {OptimizerKind::Nesterov, 0.05f, 1.0f, 300},
                        {OptimizerKind::Adam, 0.05f, 0.995f, 1500}};
  for (const Case& c : cases) {
    auto optimizer = make_optimizer(config_for(c.kind, c.lr), kSize);
    std::vector<float> params(kSize, 0.0f);
    std::vector<float> grad(kSize);
    float lr = c.lr;
    for (int step = 0; step < c.steps; ++step) {
      for (size_t i = 0; i < kSize; ++i) grad[i] = curvature[i] * (params[i] - target[i]);
      optimizer->step(params, grad);
      lr *= c.lr_decay;
      optimizer->set_lr(lr);
    }
    double worst_error = 0.0;
    for (size_t i = 0; i < kSize; ++i) {
      worst_error = std::max(worst_error, static_cast<double>(std::abs(params[i] - target[i])));
    }
    EXPECT_LT(worst_error, 1e-3) << to_string(c.kind);
  }
}

}  // namespace
}  // namespace ptrain
