#include "test_support.hpp"
#include "sync/hybrid_allreduce.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>

#include "comm/local_group.hpp"
#include "data/sharded_sampler.hpp"
#include "test_models.hpp"

namespace ptrain {
namespace {

TrainConfig config(int workers, size_t batch, OptimizerKind kind) {
  TrainConfig c;
  c.workers = workers;
  c.batch = batch;
  c.epochs = 1;
  c.max_steps = 20;
  c.seed = 3;
  c.make_strategy = test::named_strategy("hybrid");
  c.strategy.optimizer.kind = kind;
  c.strategy.optimizer.lr = kind == OptimizerKind::Adam ? 1e-2f : 0.1f;
  return c;
}

// G workers with batch B take the same steps as one worker with batch G*B.
TEST(HybridAllreduce, GWorkersEqualOneWorkerWithGTimesTheBatch) {
  const Dataset data = make_gaussian_clusters(1440, 20, 4, 9, 2.0f);
  for (OptimizerKind kind : {OptimizerKind::Momentum, OptimizerKind::Adam}) {
    for (int g : {2, 3, 4}) {
      const size_t b = 12;
      auto many = train(config(g, b, kind), data, nullptr, test::softmax_factory(data));
      auto one = train(config(1, g * b, kind), data, nullptr, test::softmax_factory(data));
      ASSERT_EQ(many.steps, 20u);
      EXPECT_LE(test::max_relative_difference(many.final_params, one.final_params), 1e-5)
          << "G=" << g << " optimizer " << to_string(kind);
      EXPECT_NEAR(many.step_losses.back(), one.step_losses.back(), 1e-5);
    }
  }
}

TEST(HybridAllreduce, EveryAllreduceAlgorithmTrainsTheSameModel) {
  const Dataset data = make_gaussian_clusters(1200, 16, 4, 5, 2.0f);
  auto c = config(5, 8, OptimizerKind::Momentum);
  const auto native = train(c, data, nullptr, test::softmax_factory(data));
  for (auto algorithm :
       {AllreduceAlgorithm::Ring, AllreduceAlgorithm::HalvingDoubling, AllreduceAlgorithm::Tree}) {
    c.make_strategy = test::named_strategy("hybrid", 0, [algorithm](StrategyChoice& s) { std::get<HybridOptions>(s).allreduce = algorithm; });
    const auto other = train(c, data, nullptr, test::softmax_factory(data));
    // The same sums, added in another order.
    EXPECT_LE(test::max_relative_difference(other.final_params, native.final_params), 1e-5)
        << to_string(algorithm);
    EXPECT_EQ(other.final_params, train(c, data, nullptr, test::softmax_factory(data)).final_params)
        << to_string(algorithm) << " is not deterministic";
  }
}

// The summary says where a worker's steps went, counting every step it took.
TEST(HybridAllreduce, NotesSayWhereTheStepsWent) {
  const Dataset data = make_gaussian_clusters(480, 16, 4, 5, 2.0f);
  const auto result = train(config(2, 8, OptimizerKind::Momentum), data, nullptr, test::softmax_factory(data));
  std::map<std::string, std::string> notes(result.notes.begin(), result.notes.end());
  ASSERT_EQ(notes.count("step phases"), 1u);
  EXPECT_NE(notes["step phases"].find("forward+backward "), std::string::npos) << notes["step phases"];
  EXPECT_NE(notes["step phases"].find("optimizer "), std::string::npos) << notes["step phases"];
  EXPECT_NE(notes["step phases"].find("mean of 20 steps"), std::string::npos) << notes["step phases"];
  EXPECT_NE(notes["all-reduce"].find("1 bucket(s)"), std::string::npos) << notes["all-reduce"];
}

TEST(HybridAllreduce, ReplicasStartFromRankZeroAndStayIdentical) {
  const Dataset data = make_gaussian_clusters(400, 8, 3, 2);
  constexpr int kWorkers = 3;
  auto group = std::make_shared<LocalGroup>(kWorkers);
  std::vector<std::unique_ptr<SoftmaxRegression>> models;
  for (int r = 0; r < kWorkers; ++r)  // different initial weights on purpose
    models.push_back(std::make_unique<SoftmaxRegression>(8, 3, 100 + static_cast<uint64_t>(r)));
  const std::vector<float> rank0_initial(models[0]->params().begin(), models[0]->params().end());
  HybridGroup strategy(HybridOptions{}, config(kWorkers, 10, OptimizerKind::Adam).strategy);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorkers; ++r)
    threads.emplace_back([&, r] {
      LocalCommunicator comm(group, r);
      auto side = strategy.for_worker(*models[static_cast<size_t>(r)], comm);
      side->start();
      if (r == 2) {
        std::vector<float> now(models[2]->params().begin(), models[2]->params().end());
        EXPECT_EQ(now, rank0_initial);
      }
      ShardedSampler sampler(data.size(), kWorkers, static_cast<size_t>(r), 10, 1);
      sampler.start_epoch(0);
      Batch batch;
      for (size_t b = 0; b < 5; ++b) {
        batch.gather(data, sampler.batch(b));
        side->step(batch, StepInfo{});
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 1; r < kWorkers; ++r) {
    std::vector<float> a(models[0]->params().begin(), models[0]->params().end());
    std::vector<float> b(models[static_cast<size_t>(r)]->params().begin(),
                         models[static_cast<size_t>(r)]->params().end());
    EXPECT_EQ(a, b) << "replica " << r;
  }
  EXPECT_NE(std::vector<float>(models[0]->params().begin(), models[0]->params().end()), rank0_initial);
}

}  // namespace
}  // namespace ptrain
