// Pipelines without LibTorch (so under the sanitizers too), on the plain C++
// layered model: stages give the bits of one worker accumulating the same
// micro-batches, pipelines side by side the bits of data-parallel workers,
// and a run stopped after a checkpoint resumes to the same bits.
#include <gtest/gtest.h>

#include "run/run_fixtures.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

RunPlan layered_plan(int workers, size_t microbatches) {
  RunPlan plan = test::softmax_plan(workers, 12, 2);
  plan.optimizer = MomentumOptions{};
  std::visit([](auto& o) { o.lr = 0.05f; }, plan.optimizer);
  plan.run.microbatches = microbatches;
  return plan;
}

RunResult run_layered(const RunPlan& plan, const LoadedData& data) {
  RunInputs inputs = test::data_only(data);
  inputs.model = test::layered_model({8, 6});  // three layers
  World world = make_world(plan);
  return run(plan, world, {}, inputs);
}

// `plan` again, resumed from the newest checkpoint in `checkpoint_dir`.
RunResult resume_layered(RunPlan plan, const std::string& checkpoint_dir, const LoadedData& data) {
  plan.run.checkpoint_dir = checkpoint_dir;
  RunInputs inputs = test::data_only(data);
  inputs.model = test::layered_model({8, 6});
  inputs.resume = checkpoint_dir;
  World world = make_world(plan);
  return run(plan, world, {}, inputs);
}

RunPlan pipeline_of(RunPlan plan, int stages, int pipelines, PipelineSchedule schedule,
                    PipelineBalance balance = PipelineBalance::Parameters) {
  PipelineOptions p;
  p.stages = stages;
  p.schedule = schedule;
  p.balance = balance;
  p.allreduce = AllreduceAlgorithm::Tree;
  plan.strategy = p;
  plan.run.workers = stages * pipelines;
  return plan;
}

TEST(PipelineLayered, StagesAndPipelinesGiveTheBitsOfAccumulatingWorkers) {
  const LoadedData data = test::small_clusters();
  for (const auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneForwardOneBackward}) {
    const RunResult one = run_layered(layered_plan(1, 3), data);
    for (const int stages : {2, 3}) {
      const RunResult split = run_layered(pipeline_of(layered_plan(1, 3), stages, 1, schedule), data);
      EXPECT_EQ(split.final_params, one.final_params) << stages << " stages, " << enum_name(schedule);
      EXPECT_EQ(split.step_losses, one.step_losses) << stages << " stages, " << enum_name(schedule);
    }
    RunPlan parallel = layered_plan(2, 3);
    parallel.strategy = HybridOptions{.allreduce = AllreduceAlgorithm::Tree};
    const RunResult two = run_layered(parallel, data);
    const RunResult pipelines = run_layered(pipeline_of(layered_plan(1, 3), 3, 2, schedule), data);
    EXPECT_EQ(pipelines.final_params, two.final_params) << "2 x 3, " << enum_name(schedule);
    EXPECT_EQ(pipelines.step_losses, two.step_losses) << "2 x 3, " << enum_name(schedule);
    EXPECT_GT(pipelines.epochs.back().test_accuracy, 0.8);
  }
}

TEST(PipelineLayered, ARunStoppedAfterACheckpointResumesToTheSameBits) {
  const LoadedData data = test::small_clusters();  // 30 steps an epoch for each of 2 pipelines
  RunPlan plan = pipeline_of(layered_plan(1, 2), 3, 2, PipelineSchedule::OneForwardOneBackward);
  const RunResult whole = run_layered(plan, data);
  test::ScratchDir dir;
  RunPlan cut = plan;
  cut.run.checkpoint_dir = dir.file("ckpt");
  cut.run.checkpoint_every = Cadence{7, 0};
  cut.run.max_steps = 40;  // stops there, as if killed after the checkpoint at step 35
  run_layered(cut, data);
  const RunResult resumed = resume_layered(plan, cut.run.checkpoint_dir, data);
  EXPECT_EQ(resumed.resumed_at_step, 35u);
  EXPECT_EQ(resumed.final_params, whole.final_params);
  EXPECT_EQ(resumed.step_losses, whole.step_losses);
}

// Where the layers of stage s begin and end, as the run's report says.
std::vector<std::pair<uint64_t, uint64_t>> cut_of(const RunResult& r) {
  std::vector<std::pair<uint64_t, uint64_t>> cut;
  for (const PipelineStageStats& s : r.pipeline)
    if (s.group == 0) cut.emplace_back(s.first_layer, s.end_layer);
  return cut;
}

bool has_note(const RunResult& r, const std::string& label) {
  for (const auto& [l, text] : r.notes)
    if (l == label) return true;
  return false;
}

TEST(PipelineLayered, ACutByMeasuredTimeTrainsTheSameBitsAndResumesWithItsCut) {
  const LoadedData data = test::small_clusters();
  const RunPlan by_parameters = pipeline_of(layered_plan(1, 2), 3, 2, PipelineSchedule::OneForwardOneBackward);
  const RunResult counted = run_layered(by_parameters, data);
  EXPECT_FALSE(has_note(counted, "cut"));
  const RunPlan plan = pipeline_of(layered_plan(1, 2), 3, 2, PipelineSchedule::OneForwardOneBackward,
                                   PipelineBalance::Time);
  const RunResult timed = run_layered(plan, data);
  EXPECT_TRUE(has_note(timed, "cut"));
  // Three layers on three stages: one each, whatever their times; the cut
  // does not change what is computed.
  EXPECT_EQ(cut_of(timed), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(timed.final_params, counted.final_params);
  EXPECT_EQ(timed.step_losses, counted.step_losses);

  // Stopped after a checkpoint and resumed: the cut comes back from the checkpoint, not measured again.
  test::ScratchDir dir;
  RunPlan stopped = plan;
  stopped.run.checkpoint_dir = dir.file("ckpt");
  stopped.run.checkpoint_every = Cadence{7, 0};
  stopped.run.max_steps = 40;
  run_layered(stopped, data);
  const RunResult resumed = resume_layered(plan, stopped.run.checkpoint_dir, data);
  EXPECT_EQ(resumed.resumed_at_step, 35u);
  EXPECT_FALSE(has_note(resumed, "cut"));
  EXPECT_EQ(cut_of(resumed), cut_of(timed));
  EXPECT_EQ(resumed.final_params, counted.final_params);
}

// Under a memory limit a cut by measured time is made among the cuts whose
// every stage fits: its state, and its layers' activations times the
// micro-batches it holds at once.
TEST(PipelineLayered, ACutByMeasuredTimeKeepsEveryStageWithinTheMemoryLimit) {
  const LoadedData data = test::small_clusters();
  const RunResult counted = run_layered(pipeline_of(layered_plan(1, 2), 2, 1, PipelineSchedule::OneForwardOneBackward), data);
  RunPlan plan = pipeline_of(layered_plan(1, 2), 2, 1, PipelineSchedule::OneForwardOneBackward, PipelineBalance::Time);
  // Layers 0-1 (88 + 54 parameters, 4 floats each with momentum) would hold 2,272 B of state before
  // their activations; layer 0 alone holds 1,408 B and two micro-batches of 432 B.
  plan.run.memory_limit = ByteSize{2400};
  const RunResult timed = run_layered(plan, data);
  EXPECT_EQ(cut_of(timed), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 1}, {1, 3}}));
  EXPECT_EQ(timed.final_params, counted.final_params);
  EXPECT_LE(timed.pipeline[0].state_bytes + timed.pipeline[0].peak_activation_bytes, 2400u);
  plan.run.memory_limit = ByteSize{1024};
  const std::string refused = test::error_message([&] { run_layered(plan, data); });
  EXPECT_NE(refused.find("run.memory_limit: no cut of model layered's 3 layers into 2 stages keeps every stage's "
                         "parameters, gradients, their sum and optimizer state and activations within 1.0 KiB"),
            std::string::npos)
      << refused;
}

}  // namespace
}  // namespace ptrain
