#include "test_support.hpp"
#include "sync/sequential_turns.hpp"

#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "data/sharded_sampler.hpp"
#include "test_models.hpp"

namespace ptrain {
namespace {

// Workers take turns: the run equals one model trained on worker 0's batch 0,
// worker 1's batch 0, ..., worker G-1's batch 0, worker 0's batch 1, ...
TEST(SequentialTurns, EqualsTheInterleavedSingleModelRun) {
  const Dataset data = make_gaussian_clusters(600, 10, 3, 4);
  constexpr int kWorkers = 3;
  constexpr size_t kBatch = 8, kSteps = 12;
  TrainConfig c;
  c.workers = kWorkers;
  c.batch = kBatch;
  c.max_steps = kSteps;
  c.seed = 17;
  c.make_strategy = test::named_strategy("sequential");
  c.strategy.optimizer.kind = OptimizerKind::Momentum;
  c.strategy.optimizer.lr = 0.05f;
  auto result = train(c, data, nullptr, test::softmax_factory(data));

  SoftmaxRegression model(data.sample_numel(), data.num_classes(), 5);
  auto optimizer = make_optimizer(c.strategy.optimizer, model.params().size());
  std::vector<ShardedSampler> samplers;
  for (size_t r = 0; r < kWorkers; ++r)
    samplers.emplace_back(data.size(), kWorkers, r, kBatch, derive_seed(c.seed, 1));
  for (auto& s : samplers) s.start_epoch(0);
  Batch batch;
  for (size_t t = 0; t < kSteps; ++t)
    for (auto& s : samplers) {
      batch.gather(data, s.batch(t));
      model.forward_backward(batch);
      optimizer->step(model.params(), model.grads());
    }
  const std::vector<float> expected(model.params().begin(), model.params().end());
  EXPECT_EQ(result.final_params, expected);
}

}  // namespace
}  // namespace ptrain
