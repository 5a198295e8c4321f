// The trainer's worker threads inside MPI ranks (train_on_threads), with
// threads standing in for the ranks: R ranks x T threads train what R x T
// workers anywhere train, given the same summation order.
#include <gtest/gtest.h>

#include <thread>

#include "compress/codec_registry.hpp"
#include "core/error.hpp"
#include "data/synthetic.hpp"
#include "simulated_ranks.hpp"
#include "sync/hybrid_allreduce.hpp"
#include "test_models.hpp"
#include "run/trainer.hpp"

namespace ptrain {
namespace {

TrainConfig config_for(int workers, AllreduceAlgorithm algorithm, CodecChoice codec = NoCompression{}) {
  TrainConfig c;
  c.workers = workers;
  c.batch = 16;
  c.epochs = 2;
  c.seed = 77;
  c.strategy.optimizer.kind = OptimizerKind::Momentum;
  c.strategy.optimizer.lr = 0.05f;
  c.strategy.optimizer.momentum = 0.9f;
  c.strategy.codec = CodecConfig{codec, 77, 0};
  HybridOptions hybrid;
  hybrid.allreduce = algorithm;
  c.make_strategy = strategy_factory(hybrid);
  return c;
}

// Every simulated rank's train_on_threads, each on a thread; rank 0's result.
RunResult train_ranks_of_threads(int ranks, int threads, const TrainConfig& config, const Dataset& data) {
  test::SimulatedRanks simulated(ranks, threads, std::chrono::seconds(60));
  std::vector<RunResult> results(static_cast<size_t>(ranks));
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> running;
  for (int r = 0; r < ranks; ++r)
    running.emplace_back([&, r] {
      try {
        const auto links = simulated.links(r);
        results[static_cast<size_t>(r)] = train_on_threads(links.across_pointers(), links.mesh_pointers(), config,
                                                           data, &data, test::softmax_factory(data));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
        simulated.abort(e.what());
      }
    });
  for (auto& t : running) t.join();
  for (const auto& e : errors)
    if (!e.empty()) throw Error(e);
  return results[0];
}

TEST(TrainOnThreads, RanksOfThreadsTrainTheBitsOfAsManyThreadsWithTheRing) {
  const Dataset data = make_gaussian_clusters(960, 12, 4, 6);
  const auto threads = train(config_for(4, AllreduceAlgorithm::Ring), data, &data, test::softmax_factory(data));
  const auto ranks = train_ranks_of_threads(2, 2, config_for(4, AllreduceAlgorithm::Ring), data);
  EXPECT_EQ(ranks.final_params, threads.final_params);
  EXPECT_EQ(ranks.step_losses, threads.step_losses);
  ASSERT_EQ(ranks.epochs.size(), 2u);
  EXPECT_EQ(ranks.worker_steps, threads.worker_steps);
  EXPECT_EQ(ranks.comm.size(), 4u);
  // DGC's parts are all-gathered and decoded in worker order: the same bits too.
  const auto dgc = DgcOptions{.density = 0.05};
  EXPECT_EQ(train_ranks_of_threads(2, 2, config_for(4, AllreduceAlgorithm::Hierarchical, dgc), data).final_params,
            train(config_for(4, AllreduceAlgorithm::Ring, dgc), data, &data, test::softmax_factory(data)).final_params);
}

// Hierarchical sums in another order than the flat ring: its own bits every
// run, the ring's result within float rounding, with and without fp16.
TEST(TrainOnThreads, HierarchicalIsRepeatableAndCloseToTheRing) {
  const Dataset data = make_gaussian_clusters(960, 12, 4, 6);
  for (const CodecChoice& codec : {CodecChoice{NoCompression{}}, CodecChoice{Fp16Options{}}}) {
    const auto once = train_ranks_of_threads(2, 2, config_for(4, AllreduceAlgorithm::Hierarchical, codec), data);
    const auto again = train_ranks_of_threads(2, 2, config_for(4, AllreduceAlgorithm::Hierarchical, codec), data);
    const auto ring = train(config_for(4, AllreduceAlgorithm::Ring, codec), data, &data, test::softmax_factory(data));
    EXPECT_EQ(once.final_params, again.final_params);
    EXPECT_LT(test::max_relative_difference(once.final_params, ring.final_params), 1e-3);
    EXPECT_GT(once.epochs.back().test_accuracy, 0.9);
  }
  // On one rank it is the shared-memory sum: native's bits on threads.
  EXPECT_EQ(train_ranks_of_threads(1, 4, config_for(4, AllreduceAlgorithm::Hierarchical), data).final_params,
            train(config_for(4, AllreduceAlgorithm::Native), data, &data, test::softmax_factory(data)).final_params);
}

// A replica that fails at its third step.
class FailingReplica : public SoftmaxRegression {
 public:
  using SoftmaxRegression::SoftmaxRegression;
  float forward_backward(const Batch& b) override {
    if (++steps_ == 3) throw Error("disk on fire");
    return SoftmaxRegression::forward_backward(b);
  }

 private:
  int steps_ = 0;
};

// Worker 3 fails in its step; its sibling and the other rank, waiting on it
// within the rank and across, stop at once rather than at the timeout.
TEST(TrainOnThreads, AFailingWorkerIsNamedAndStopsTheOthers) {
  const Dataset data = make_gaussian_clusters(960, 12, 4, 6);
  auto config = config_for(4, AllreduceAlgorithm::Hierarchical);
  config.comm_timeout = std::chrono::milliseconds(60000);
  test::SimulatedRanks simulated(2, 2, config.comm_timeout);
  std::vector<std::string> errors(2);
  std::vector<std::thread> running;
  const auto started = std::chrono::steady_clock::now();
  for (int r = 0; r < 2; ++r)
    running.emplace_back([&, r] {
      try {
        const auto links = simulated.links(r);
        train_on_threads(links.across_pointers(), links.mesh_pointers(), config, data, &data,
                         [&](int worker) -> std::unique_ptr<Model> {
                           if (worker == 3)
                             return std::make_unique<FailingReplica>(data.sample_numel(), data.num_classes(), 5);
                           return test::softmax_factory(data)(worker);
                         });
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : running) t.join();
  EXPECT_EQ(errors[1], "worker 3 failed at its step 3: disk on fire");
  EXPECT_NE(errors[0], "");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
}

}  // namespace
}  // namespace ptrain
