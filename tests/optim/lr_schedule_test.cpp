#include "optim/lr_schedule.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "optim/optimizer.hpp"

namespace ptrain {
namespace {

TEST(LrSchedule, ConstantKeepsTheRate) {
  const LrSchedule constant;
  for (double epoch : {0.0, 0.5, 3.0, 1e6}) EXPECT_EQ(constant.factor(epoch), 1.0);
  EXPECT_EQ(describe(constant), "");
}

TEST(LrSchedule, StepMultipliesAfterEachMilestone) {
  const LrSchedule step{LrDecay::Step, {2, 5}, 0.25, 10};
  EXPECT_EQ(step.factor(0), 1.0);
  EXPECT_EQ(step.factor(1.999), 1.0);  // the last step of epoch 2
  EXPECT_EQ(step.factor(2.0), 0.25);   // the first of epoch 3
  EXPECT_EQ(step.factor(4.9), 0.25);
  EXPECT_EQ(step.factor(5.0), 0.0625);
  EXPECT_EQ(step.factor(9.99), 0.0625);
  EXPECT_EQ(describe(step), "x0.25 after epoch(s) 2,5");
}

TEST(LrSchedule, CosineAnnealsToZeroOverTheRun) {
  const LrSchedule cosine{LrDecay::Cosine, {}, 0.1, 4};
  EXPECT_EQ(cosine.factor(0), 1.0);
  EXPECT_NEAR(cosine.factor(1), (1 + std::cos(M_PI / 4)) / 2, 1e-15);
  EXPECT_NEAR(cosine.factor(2), 0.5, 1e-15);
  EXPECT_GT(cosine.factor(3.99), 0.0);
  EXPECT_LT(cosine.factor(3.99), 1e-3);
  EXPECT_EQ(cosine.factor(4), 0.0);
  EXPECT_EQ(cosine.factor(7), 0.0);  // a run resumed past its planned end
  double before = 2;
  for (int i = 0; i < 400; ++i) {  // never rises
    const double f = cosine.factor(i / 100.0);
    EXPECT_LE(f, before);
    before = f;
  }
  EXPECT_EQ(describe(cosine), "cosine to 0 over 4 epochs");
}

TEST(LrSchedule, TheRateIsTheOptimizersTimesTheFactor) {
  OptimizerConfig config{.kind = OptimizerKind::Sgd, .lr = 0.1f};
  EXPECT_EQ(lr_at(config, 3), 0.1f);  // constant: the very bits of lr
  config.schedule = {LrDecay::Step, {1}, 0.5, 2};
  EXPECT_EQ(lr_at(config, 0.5), 0.1f);
  EXPECT_EQ(lr_at(config, 1.5), 0.05f);
}

// Threads that share one optimizer scale its rate per step (the
// shared-memory strategies): the same bits as an optimizer made with that rate.
TEST(LrSchedule, AScaledStepIsAStepAtTheScaledRate) {
  for (OptimizerKind kind : {OptimizerKind::Sgd, OptimizerKind::Momentum, OptimizerKind::Nesterov,
                             OptimizerKind::Adam}) {
    const std::vector<float> grad = {0.5f, -1.25f, 2.0f, 0.01f};
    std::vector<float> scaled = {1, 2, 3, 4}, direct = scaled;
    auto full = make_optimizer({.kind = kind, .lr = 0.5f}, 4);
    auto half = make_optimizer({.kind = kind, .lr = 0.125f}, 4);
    std::vector<float> state_a(8, 0.0f), state_b(8, 0.0f);
    for (int64_t s = 0; s < 3; ++s) {
      full->step_with(scaled, grad, {{state_a.data(), state_a.data() + 4}, s, 0.25f});
      half->step_with(direct, grad, {{state_b.data(), state_b.data() + 4}, s, 1.0f});
    }
    EXPECT_EQ(scaled, direct) << to_string(kind);
  }
}

}  // namespace
}  // namespace ptrain
