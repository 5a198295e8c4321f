// Hybrid training with gradient compression, end to end on the native model.
#include <gtest/gtest.h>

#include "test_support.hpp"
#include "core/error.hpp"
#include "plan/run_plan.hpp"
#include "sync/strategy.hpp"
#include "test_models.hpp"

namespace ptrain {
namespace {

TrainConfig config(int workers, const std::string& codec, OptimizerKind kind = OptimizerKind::Momentum) {
  TrainConfig c;
  c.workers = workers;
  c.batch = 16;
  c.epochs = 3;
  c.max_steps = 60;
  c.seed = 7;
  c.strategy.optimizer.kind = kind;
  c.strategy.optimizer.lr = 0.05f;
  c.make_strategy = test::named_strategy("hybrid");
  c.strategy.codec.choice = *CodecRegistry::make(codec);
  return c;
}

float mean_first_losses(const RunResult& r) { return (r.step_losses[0] + r.step_losses[1]) / 2; }
float mean_last_losses(const RunResult& r) {
  const size_t n = r.step_losses.size();
  return (r.step_losses[n - 1] + r.step_losses[n - 2] + r.step_losses[n - 3]) / 3;
}

TEST(HybridCompress, EveryCodecTrainsAndReportsItsRatio) {
  const Dataset data = make_gaussian_clusters(2400, 32, 4, 3, 2.0f);
  for (const char* codec : {"none", "fp16", "int8", "topk", "dgc"}) {
    auto c = config(3, codec);
    if (auto* topk = std::get_if<TopkOptions>(&c.strategy.codec.choice)) topk->ratio = 0.1;
    if (auto* dgc = std::get_if<DgcOptions>(&c.strategy.codec.choice)) dgc->density = 0.05;
    const auto r = train(c, data, nullptr, test::softmax_factory(data));
    ASSERT_EQ(r.step_losses.size(), 60u);
    EXPECT_LT(mean_last_losses(r), 0.5f * mean_first_losses(r)) << codec;
    ASSERT_EQ(r.codec.size(), 3u);
    CodecStats total;
    for (const auto& s : r.codec) total += s;
    if (std::string(codec) == "none") {
      EXPECT_EQ(total.encoded_bytes, 0u);
    } else {
      EXPECT_EQ(total.dense_bytes, 3u * 60u * (32u * 4u + 4u) * sizeof(float)) << codec;
      EXPECT_GT(total.ratio(), 1.5) << codec;
    }
  }
}

// The run's optimizer and codec, as run() makes them from a plan.
void use_plan(TrainConfig& c, OptimizerChoice optimizer, CodecChoice codec) {
  RunPlan plan;
  plan.optimizer = optimizer;
  plan.codec = codec;
  plan.run.seed = c.seed;
  const Effective e = effective_optimizer_and_codec(plan);
  c.strategy.optimizer = e.optimizer;
  c.strategy.codec = e.codec;
}

// With every element sent and no masking, DGC's momentum correction is
// momentum SGD: the codec keeps u = m u + g and the optimizer becomes SGD.
TEST(HybridCompress, DgcAtFullDensityIsMomentumSgd) {
  const Dataset data = make_gaussian_clusters(1200, 16, 3, 5, 2.0f);
  for (int workers : {1, 3}) {
    const auto plain = train(config(workers, "none"), data, nullptr, test::softmax_factory(data));
    auto c = config(workers, "dgc");
    DgcOptions dgc;
    dgc.density = 1.0;
    dgc.masking = false;
    MomentumOptions momentum;
    momentum.lr = 0.05f;
    use_plan(c, momentum, dgc);
    EXPECT_EQ(c.strategy.optimizer.kind, OptimizerKind::Sgd);
    EXPECT_EQ(c.strategy.codec.momentum, momentum.momentum);
    const auto run = train(c, data, nullptr, test::softmax_factory(data));
    EXPECT_LE(test::max_relative_difference(run.final_params, plain.final_params), 1e-5) << workers;
  }
}

TEST(HybridCompress, MomentumCorrectionNeedsAMomentumOptimizer) {
  auto c = config(2, "dgc", OptimizerKind::Adam);
  use_plan(c, AdamOptions{}, DgcOptions{});
  EXPECT_EQ(c.strategy.optimizer.kind, OptimizerKind::Adam);
  EXPECT_EQ(c.strategy.codec.momentum, 0.0f);
  // Asked for explicitly, it is refused, naming the field and the optimizer.
  RunPlan plan;
  DgcOptions on;
  on.momentum_correction = Switch::On;
  plan.codec = on;
  EXPECT_NE(check_plan(plan).joined().find("codec.momentum_correction on needs the momentum optimizer"),
            std::string::npos)
      << check_plan(plan).joined();
}

TEST(HybridCompress, SameSeedSameBits) {
  const Dataset data = make_gaussian_clusters(1200, 16, 3, 5, 2.0f);
  for (const char* codec : {"int8", "dgc"}) {
    auto c = config(3, codec);
    if (auto* int8 = std::get_if<Int8Options>(&c.strategy.codec.choice)) int8->rounding = Rounding::Stochastic;
    if (auto* dgc = std::get_if<DgcOptions>(&c.strategy.codec.choice)) dgc->density = 0.1;
    const auto a = train(c, data, nullptr, test::softmax_factory(data));
    const auto b = train(c, data, nullptr, test::softmax_factory(data));
    EXPECT_EQ(a.final_params, b.final_params) << codec;
  }
}

TEST(HybridCompress, OnlyStrategiesThatExchangeGradientsCompress) {
  RunPlan plan;
  plan.codec = Fp16Options{};
  plan.strategy = SequentialOptions{};
  EXPECT_NE(check_plan(plan).joined().find("codec: the sequential strategy exchanges no gradients"), std::string::npos);
  plan.strategy = HybridOptions{};
  EXPECT_TRUE(check_plan(plan).empty()) << check_plan(plan).joined();
}

}  // namespace
}  // namespace ptrain
