// The order of a pipeline stage's passes: GPipe and 1F1B each run every
// micro-batch forward once and backward once, backwards in micro-batch order
// (the order one worker sums them in), never a backward before its forward,
// and 1F1B holds at most S - s micro-batches' activations on stage s.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/pipeline_schedule.hpp"

namespace ptrain {
namespace {

std::string text_of(const std::vector<PipelinePass>& passes) {
  std::string s;
  for (const auto& p : passes) s += (p.forward ? "F" : "B") + std::to_string(p.micro) + " ";
  return s;
}

TEST(PipelineSchedule, GPipeRunsEveryForwardThenEveryBackward) {
  EXPECT_EQ(text_of(pipeline_passes(PipelineSchedule::GPipe, 0, 3, 4)), "F0 F1 F2 F3 B0 B1 B2 B3 ");
  EXPECT_EQ(text_of(pipeline_passes(PipelineSchedule::GPipe, 2, 3, 4)), "F0 F1 F2 F3 B0 B1 B2 B3 ");
}

TEST(PipelineSchedule, OneForwardOneBackwardFillsThenAlternatesThenDrains) {
  EXPECT_EQ(text_of(pipeline_passes(PipelineSchedule::OneForwardOneBackward, 0, 3, 4)), "F0 F1 F2 B0 F3 B1 B2 B3 ");
  EXPECT_EQ(text_of(pipeline_passes(PipelineSchedule::OneForwardOneBackward, 1, 3, 4)), "F0 F1 B0 F2 B1 F3 B2 B3 ");
  EXPECT_EQ(text_of(pipeline_passes(PipelineSchedule::OneForwardOneBackward, 2, 3, 4)), "F0 B0 F1 B1 F2 B2 F3 B3 ");
  // Fewer micro-batches than stages: the fill is cut to them.
  EXPECT_EQ(text_of(pipeline_passes(PipelineSchedule::OneForwardOneBackward, 0, 4, 2)), "F0 F1 B0 B1 ");
}

TEST(PipelineSchedule, EveryScheduleIsWholeOrderedAndHoldsWhatItSays) {
  for (const auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneForwardOneBackward})
    for (size_t stages = 1; stages <= 6; ++stages)
      for (size_t stage = 0; stage < stages; ++stage)
        for (size_t micro = 1; micro <= 9; ++micro) {
          const auto passes = pipeline_passes(schedule, stage, stages, micro);
          const std::string what = text_of(passes);
          ASSERT_EQ(passes.size(), 2 * micro) << what;
          std::vector<int> forwarded(micro, 0);
          size_t next_backward = 0;
          for (const auto& p : passes) {
            ASSERT_LT(p.micro, micro) << what;
            if (p.forward) {
              EXPECT_EQ(forwarded[p.micro]++, 0) << what;
            } else {
              EXPECT_EQ(forwarded[p.micro], 1) << what << ": a backward before its forward";
              EXPECT_EQ(p.micro, next_backward++) << what << ": backwards out of order";
            }
          }
          const size_t held = micro_batches_in_flight(passes);
          if (schedule == PipelineSchedule::GPipe)
            EXPECT_EQ(held, micro) << what;
          else
            EXPECT_EQ(held, std::min(stages - stage, micro)) << what;
        }
}

}  // namespace
}  // namespace ptrain
