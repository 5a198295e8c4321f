// Pipelines under mpirun: one stage per rank, activations and their
// gradients between ranks, ends with the bits of one worker accumulating the
// same micro-batches (both schedules); pipelines of two stages side by side
// the bits of as many data-parallel workers; and a run stopped after a
// checkpoint resumes on the ranks to the bits of the run never interrupted.
#include <gtest/gtest.h>

#include "comm/mpi_communicator.hpp"
#include "model/model_registry.hpp"
#include "run/trainer.hpp"
#include "sync/pipeline_strategy.hpp"
#include "mpi_test_support.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

// An MLP of eight Linear layers: a stage for each of up to eight ranks.
ModelFactory deep_mlp(const Dataset& data) {
  return [&data](int) { return make_model(ModelConfig{"mlp", {12, 12, 12, 12, 12, 12, 12}, 3}, data.sample_shape(), 3); };
}

TrainConfig pipeline_config(int stages, PipelineSchedule schedule, int pipelines = 1) {
  TrainConfig c;
  PipelineOptions p;
  p.stages = stages;
  p.schedule = schedule;
  p.allreduce = AllreduceAlgorithm::Tree;
  c.make_strategy = strategy_factory(p);
  c.pipeline_stages = stages;
  c.workers = stages * pipelines;
  c.batch = 10;
  c.microbatches = 3;
  c.epochs = 2;
  c.seed = 4;
  c.strategy.optimizer.kind = OptimizerKind::Adam;
  c.strategy.optimizer.lr = 0.01f;
  c.comm_timeout = std::chrono::seconds(60);
  return c;
}

TEST(MpiPipeline, RanksAsStagesGiveTheBitsOfOneWorkerAccumulating) {
  MpiCommunicator world(std::chrono::seconds(60));
  if (world.size() < 2) GTEST_SKIP() << "a pipeline of one stage is one worker";
  const Dataset data = make_gaussian_clusters(300, 6, 3, 2);
  for (const auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneForwardOneBackward}) {
    const RunResult ranks = train_on(world, pipeline_config(world.size(), schedule), data, &data, deep_mlp(data));
    if (world.rank() != 0) continue;
    TrainConfig one = pipeline_config(1, schedule);
    one.make_strategy = test::named_strategy("hybrid");
    one.pipeline_stages = 0;
    const RunResult reference = train(one, data, &data, deep_mlp(data));
    EXPECT_EQ(ranks.final_params, reference.final_params) << enum_name(schedule);
    EXPECT_EQ(ranks.step_losses, reference.step_losses) << enum_name(schedule);
    ASSERT_EQ(ranks.pipeline.size(), static_cast<size_t>(world.size()));
    EXPECT_GT(ranks.pipeline.back().bytes_received, 0u);
  }
}

TEST(MpiPipeline, PipelinesOfTwoStagesGiveTheBitsOfDataParallelWorkers) {
  MpiCommunicator world(std::chrono::seconds(60));
  if (world.size() < 4 || world.size() % 2 != 0) GTEST_SKIP() << "needs two pipelines of two stages or more";
  const Dataset data = make_gaussian_clusters(480, 6, 3, 2);
  const int pipelines = world.size() / 2;
  const RunResult ranks = train_on(world, pipeline_config(2, PipelineSchedule::OneForwardOneBackward, pipelines), data,
                                   &data, deep_mlp(data));
  if (world.rank() != 0) return;
  TrainConfig parallel = pipeline_config(2, PipelineSchedule::OneForwardOneBackward, pipelines);
  parallel.make_strategy = test::named_strategy("hybrid", 0, [](StrategyChoice& s) {
    std::get<HybridOptions>(s).allreduce = AllreduceAlgorithm::Tree;  // rank order, as the pipelines' tree
  });
  parallel.pipeline_stages = 0;
  parallel.workers = pipelines;
  const RunResult reference = train(parallel, data, &data, deep_mlp(data));
  EXPECT_EQ(ranks.final_params, reference.final_params);
  EXPECT_EQ(ranks.step_losses, reference.step_losses);
}

TEST(MpiPipeline, RanksResumeToTheBitsOfTheUninterruptedRun) {
  MpiCommunicator world(std::chrono::seconds(60));
  if (world.size() < 2) GTEST_SKIP() << "a pipeline of one stage is one worker";
  const Dataset data = make_gaussian_clusters(300, 6, 3, 2);  // 30 steps an epoch
  const TrainConfig whole_config = pipeline_config(world.size(), PipelineSchedule::OneForwardOneBackward);
  const RunResult whole = train_on(world, whole_config, data, &data, deep_mlp(data));

  std::unique_ptr<test::ScratchDir> scratch;
  if (world.rank() == 0) scratch = std::make_unique<test::ScratchDir>();
  const std::string dir = shared_dir(world, scratch.get()) + "/ckpt";
  TrainConfig cut = whole_config;
  cut.checkpoint.dir = dir;
  cut.checkpoint.every = Cadence{7, 0};
  cut.checkpoint.plan_json = "{}";
  cut.max_steps = 40;  // the run stops there, as if killed after its checkpoint at step 35
  train_on(world, cut, data, &data, deep_mlp(data));
  world.barrier();

  TrainConfig resumed_config = whole_config;
  resumed_config.resume_dir = dir;
  resumed_config.resume = CheckpointStore(dir, 3).newest();
  ASSERT_TRUE(resumed_config.resume);
  EXPECT_EQ(resumed_config.resume->step, 35u);
  const RunResult resumed = train_on(world, resumed_config, data, &data, deep_mlp(data));
  if (world.rank() != 0) return;
  EXPECT_EQ(resumed.final_params, whole.final_params);
  EXPECT_EQ(resumed.step_losses, whole.step_losses);
  // The same checkpoint resumed on threads.
  const RunResult threads = train(resumed_config, data, &data, deep_mlp(data));
  EXPECT_EQ(threads.final_params, whole.final_params);
}

}  // namespace
}  // namespace ptrain
