// The pipeline's flow against what equal stages and free messages give by
// hand, and against what waiting for receivers and shared cores must change.
#include "perfmodel/pipeline_flow.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace ptrain {
namespace {

PipelineFlowConfig equal_stages(PipelineSchedule schedule, size_t stages, size_t micro) {
  PipelineFlowConfig c;
  c.schedule = schedule;
  c.microbatches = micro;
  c.forward_s.assign(stages, 1e-3);
  c.backward_s.assign(stages, 2e-3);
  c.blocking = false;
  return c;
}

TEST(PipelineFlow, EqualStagesWithFreeMessagesTakeMPlusSMinusOneSlotsEitherSchedule) {
  for (const auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneForwardOneBackward})
    for (const size_t stages : {1, 2, 4})
      for (const size_t micro : {1, 4, 8}) {
        const PipelineFlow flow = simulate_pipeline_flow(equal_stages(schedule, stages, micro));
        const double slots = static_cast<double>(micro + stages - 1);
        EXPECT_NEAR(flow.step_s, slots * 3e-3, 1e-12) << enum_name(schedule) << " S " << stages << " M " << micro;
        for (size_t s = 0; s < stages; ++s) {
          EXPECT_NEAR(flow.compute_s[s], static_cast<double>(micro) * 3e-3, 1e-12);
          // The bubble: (S - 1) / (M + S - 1) of the step on every stage.
          EXPECT_NEAR(flow.idle_s[s] / flow.step_s, static_cast<double>(stages - 1) / slots, 1e-9);
        }
      }
}

TEST(PipelineFlow, TheSlowestStageSetsThePace) {
  auto c = equal_stages(PipelineSchedule::GPipe, 3, 8);
  c.forward_s[1] = 2e-3, c.backward_s[1] = 4e-3;  // twice the others
  const PipelineFlow flow = simulate_pipeline_flow(c);
  // Each micro-batch's passes through the fast stages, and M of the slow one's.
  EXPECT_NEAR(flow.step_s, 2 * 3e-3 + 8 * 6e-3, 1e-12);
  EXPECT_LT(flow.idle_s[1], flow.idle_s[0]);
}

TEST(PipelineFlow, HopsAddToTheStepAndRendezvousSendsWaitForTheReceiver) {
  auto c = equal_stages(PipelineSchedule::GPipe, 2, 1);
  c.hop_s = c.transfer_s = 0.5e-3;
  // One micro-batch: forward, its activations over, forward, backward, its gradient back, backward.
  EXPECT_NEAR(simulate_pipeline_flow(c).step_s, 6e-3 + 2 * 0.5e-3, 1e-12);
  c.blocking = true;
  EXPECT_NEAR(simulate_pipeline_flow(c).step_s, 6e-3 + 2 * 0.5e-3, 1e-12);
  // Many micro-batches: a blocking sender cannot run ahead of a busy receiver.
  for (const auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneForwardOneBackward}) {
    auto many = equal_stages(schedule, 4, 8);
    many.hop_s = many.transfer_s = 0.5e-3;
    const double eager = simulate_pipeline_flow(many).step_s;
    many.blocking = true;
    EXPECT_GE(simulate_pipeline_flow(many).step_s, eager - 1e-12) << enum_name(schedule);
  }
}

TEST(PipelineFlow, RanksSharingCoresStretchThePassesOnlyWhileManyAreBusy) {
  // One micro-batch: one stage busy at a time, so half a core each costs nothing.
  auto one = equal_stages(PipelineSchedule::GPipe, 4, 1);
  one.cores_per_rank = 0.5;
  EXPECT_DOUBLE_EQ(simulate_pipeline_flow(one).stretch, 1);
  // Many: the stages are mostly busy together, and slowed.
  auto many = equal_stages(PipelineSchedule::OneForwardOneBackward, 4, 32);
  const double alone = simulate_pipeline_flow(many).step_s;
  many.cores_per_rank = 0.5;
  const PipelineFlow shared = simulate_pipeline_flow(many);
  EXPECT_GT(shared.stretch, 1.5);
  EXPECT_LE(shared.stretch, 2 + 1e-9);
  EXPECT_NEAR(shared.step_s, alone * shared.stretch, 1e-9);
}

TEST(PipelineFlow, RefusesStagesWithoutCosts) {
  PipelineFlowConfig c;
  EXPECT_NE(test::error_message([&] { simulate_pipeline_flow(c); }).find("0 stages"), std::string::npos);
  c = equal_stages(PipelineSchedule::GPipe, 2, 2);
  c.backward_s[1] = -1;
  EXPECT_NE(test::error_message([&] { simulate_pipeline_flow(c); }).find("stage 1's costs must be >= 0"),
            std::string::npos);
}

}  // namespace
}  // namespace ptrain
