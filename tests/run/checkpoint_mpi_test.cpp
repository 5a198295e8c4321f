// Checkpoints under mpirun: each rank writes its own part, rank 0 commits the
// manifest, and a run resumed on ranks (or on threads) from a checkpoint ends
// with the bits of the run that was never interrupted.
#include <gtest/gtest.h>

#include "comm/mpi_communicator.hpp"
#include "test_models.hpp"
#include "mpi_test_support.hpp"
#include "test_support.hpp"
#include "run/trainer.hpp"

namespace ptrain {
namespace {

TrainConfig config_for(int workers) {
  TrainConfig c;
  c.workers = workers;
  c.batch = 8;
  c.epochs = 2;
  c.seed = 9;
  c.make_strategy = test::named_strategy("hybrid");
  c.strategy.optimizer.kind = OptimizerKind::Momentum;
  c.strategy.optimizer.lr = 0.05f;
  DgcOptions dgc;
  dgc.density = 0.2;
  c.strategy.codec = CodecConfig{dgc, 3, 0};
  c.comm_timeout = std::chrono::seconds(60);
  return c;
}

TEST(MpiCheckpoints, RanksResumeToTheBitsOfTheUninterruptedRun) {
  MpiCommunicator world(std::chrono::seconds(60));
  const Dataset data = make_gaussian_clusters(480, 6, 3, 2);
  const TrainConfig whole_config = config_for(world.size());
  const RunResult whole = train_on(world, whole_config, data, &data, test::softmax_factory(data));

  std::unique_ptr<test::ScratchDir> scratch;
  if (world.rank() == 0) scratch = std::make_unique<test::ScratchDir>();
  const std::string dir = shared_dir(world, scratch.get()) + "/ckpt";
  TrainConfig cut = whole_config;
  cut.checkpoint.dir = dir;
  cut.checkpoint.every = Cadence{7, 0};
  cut.checkpoint.plan_json = "{}";
  const size_t steps = 480 / static_cast<size_t>(world.size()) / 8;  // per epoch
  cut.max_steps = steps + 10;  // the run stops there, as if killed after its checkpoint at a multiple of 7
  train_on(world, cut, data, &data, test::softmax_factory(data));
  world.barrier();

  TrainConfig resumed_config = whole_config;
  resumed_config.resume_dir = dir;
  resumed_config.resume = CheckpointStore(dir, 3).newest();
  ASSERT_TRUE(resumed_config.resume);
  EXPECT_EQ(resumed_config.resume->step, (steps + 10) / 7 * 7);
  EXPECT_EQ(resumed_config.resume->parts.size(), static_cast<size_t>(world.size()));
  const RunResult resumed = train_on(world, resumed_config, data, &data, test::softmax_factory(data));
  if (world.rank() != 0) return;
  EXPECT_EQ(resumed.final_params, whole.final_params);
  EXPECT_EQ(resumed.step_losses, whole.step_losses);
  // The same checkpoint resumed on threads.
  const RunResult threads = train(resumed_config, data, &data, test::softmax_factory(data));
  EXPECT_EQ(threads.final_params, whole.final_params);
}

// ps-sync with its shard on the last rank: every worker rank writes its part
// (worker 0's holds the shard's state), and the run resumes on ranks to the
// same bits, and on threads too.
TEST(MpiCheckpoints, PsSyncRanksResumeToTheBitsOfTheUninterruptedRun) {
  MpiCommunicator world(std::chrono::seconds(60));
  if (world.size() < 2) GTEST_SKIP() << "needs a worker and a shard";
  const int workers = world.size() - 1;
  const bool serving = world.rank() == workers;
  auto mine = world.split(serving ? 1 : 0);
  const Dataset data = make_gaussian_clusters(480, 6, 3, 2);
  TrainConfig whole_config = config_for(workers);
  whole_config.make_strategy = test::named_strategy("ps-sync", 1);
  auto run_it = [&](const TrainConfig& c) {
    if (serving) {
      serve_on(world, c, data, test::softmax_factory(data));
      return RunResult{};
    }
    return train_on(*mine, world, c, data, &data, test::softmax_factory(data));
  };
  const RunResult whole = run_it(whole_config);

  std::unique_ptr<test::ScratchDir> scratch;
  if (world.rank() == 0) scratch = std::make_unique<test::ScratchDir>();
  const std::string dir = shared_dir(world, scratch.get()) + "/ckpt";
  TrainConfig cut = whole_config;
  cut.checkpoint.dir = dir;
  cut.checkpoint.every = Cadence{5, 0};
  cut.checkpoint.plan_json = "{}";
  const size_t steps = 480 / static_cast<size_t>(workers) / 8;  // per epoch
  cut.max_steps = steps + 7;
  run_it(cut);
  world.barrier();

  TrainConfig resumed_config = whole_config;
  resumed_config.resume_dir = dir;
  resumed_config.resume = CheckpointStore(dir, 3).newest();
  ASSERT_TRUE(resumed_config.resume);
  EXPECT_EQ(resumed_config.resume->step, (steps + 7) / 5 * 5);
  EXPECT_EQ(resumed_config.resume->parts.size(), static_cast<size_t>(workers));
  const RunResult resumed = run_it(resumed_config);
  if (world.rank() != 0) return;
  EXPECT_EQ(resumed.final_params, whole.final_params);
  EXPECT_EQ(resumed.step_losses, whole.step_losses);
  const RunResult threads = train(resumed_config, data, &data, test::softmax_factory(data));
  EXPECT_EQ(threads.final_params, whole.final_params);
}

}  // namespace
}  // namespace ptrain
