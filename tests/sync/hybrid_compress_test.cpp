// Hybrid training with gradient compression, end to end on the native model.
#include <gtest/gtest.h>

#include "core/error.hpp"
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
  c.strategy.codec.name = codec;
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
    c.strategy.codec.topk_ratio = 0.1;
    c.strategy.codec.dgc.density = 0.05;
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

// With every element sent and no masking, DGC's momentum correction is
// momentum SGD: the codec keeps u = m u + g and the optimizer becomes SGD.
TEST(HybridCompress, DgcAtFullDensityIsMomentumSgd) {
  const Dataset data = make_gaussian_clusters(1200, 16, 3, 5, 2.0f);
  for (int workers : {1, 3}) {
    const auto plain = train(config(workers, "none"), data, nullptr, test::softmax_factory(data));
    auto c = config(workers, "dgc");
    c.strategy.codec.dgc.density = 1.0;
    c.strategy.codec.dgc.momentum_masking = false;
    const StrategyConfig used = effective_strategy_config(c.strategy);
    EXPECT_EQ(used.optimizer.kind, OptimizerKind::Sgd);
    EXPECT_TRUE(used.codec.dgc.momentum_correction);
    EXPECT_EQ(used.codec.dgc.momentum, c.strategy.optimizer.momentum);
    const auto dgc = train(c, data, nullptr, test::softmax_factory(data));
    EXPECT_LE(test::max_relative_difference(dgc.final_params, plain.final_params), 1e-5) << workers;
  }
}

TEST(HybridCompress, MomentumCorrectionNeedsAMomentumOptimizer) {
  auto c = config(2, "dgc", OptimizerKind::Adam);
  const StrategyConfig used = effective_strategy_config(c.strategy);
  EXPECT_EQ(used.optimizer.kind, OptimizerKind::Adam);
  EXPECT_FALSE(used.codec.dgc.momentum_correction);
}

TEST(HybridCompress, SameSeedSameBits) {
  const Dataset data = make_gaussian_clusters(1200, 16, 3, 5, 2.0f);
  for (const char* codec : {"int8", "dgc"}) {
    auto c = config(3, codec);
    c.strategy.codec.int8_stochastic = true;
    c.strategy.codec.dgc.density = 0.1;
    const auto a = train(c, data, nullptr, test::softmax_factory(data));
    const auto b = train(c, data, nullptr, test::softmax_factory(data));
    EXPECT_EQ(a.final_params, b.final_params) << codec;
  }
}

TEST(HybridCompress, OnlyTheHybridStrategyCompresses) {
  auto c = config(2, "fp16").strategy;
  c.name = "sequential";
  EXPECT_THROW(make_strategy_group(c, 10, 2), Error);
  c.name = "hybrid";
  c.codec.name = "zip";
  EXPECT_THROW(make_strategy_group(c, 10, 2), Error);
}

}  // namespace
}  // namespace ptrain
