// The votes on whether a run goes on: at an epoch's end (each worker's typed
// status, heard by all alike) and after a step (agree_to_stop's StepStop).
#include "run/stop_vote.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <mutex>

#include "core/run_failure.hpp"
#include "local_workers.hpp"
#include "sync/strategy.hpp"

namespace ptrain {
namespace {

using Kind = WorkerStatus::Kind;
constexpr auto kVoteTimeout = std::chrono::milliseconds(10000);

// What every worker hears when worker r says statuses[r]; "throws: ..." for an error.
std::vector<std::string> verdicts(const std::vector<WorkerStatus>& statuses) {
  std::vector<std::string> heard(statuses.size());
  const auto errors = test::run_local_workers(
      static_cast<int>(statuses.size()), kVoteTimeout, [&](int r, LocalCommunicator& comm) {
        try {
          heard[static_cast<size_t>(r)] = run_stop_verdict(comm, statuses[static_cast<size_t>(r)]);
        } catch (const InterruptedError& e) {
          heard[static_cast<size_t>(r)] = std::string("throws: ") + e.what();
        }
      });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  return heard;
}

std::vector<std::string> everyone_hears(size_t n, const std::string& s) {
  return std::vector<std::string>(n, s);
}

TEST(StopVote, EveryWorkerTrainingGoesOn) { EXPECT_EQ(verdicts({{}, {}, {}}), everyone_hears(3, "")); }

TEST(StopVote, ADivergedWorkerStopsTheRunWithItsReasonWhateverTheOthersSay) {
  EXPECT_EQ(verdicts({{Kind::TestDiverged, "test"}, {Kind::Left, "left"}, {Kind::Diverged, "worker 2: nan"}}),
            everyone_hears(3, "worker 2: nan"));
}

TEST(StopVote, TheFirstDivergedWorkerInRankOrderIsNamed) {
  EXPECT_EQ(verdicts({{}, {Kind::Diverged, "worker 1"}, {Kind::Diverged, "worker 2"}}),
            everyone_hears(3, "worker 1"));
}

TEST(StopVote, ADivergedTestLossStopsTheRun) {
  EXPECT_EQ(verdicts({{Kind::TestDiverged, "the test loss became nan"}, {}, {Kind::Left, "worker 2 left"}}),
            everyone_hears(3, "the test loss became nan"));
}

TEST(StopVote, WorkersThatLeftAnAsyncRunLeaveTheOthersTraining) {
  EXPECT_EQ(verdicts({{}, {Kind::DivergedAndLeft, "worker 1: nan"}, {Kind::Left, "worker 2 failed"}}),
            everyone_hears(3, ""));
}

TEST(StopVote, EveryWorkerGoneAndOneDivergedIsADivergedRun) {
  EXPECT_EQ(verdicts({{Kind::Left, "worker 0 failed"}, {Kind::DivergedAndLeft, "worker 1: nan"}}),
            everyone_hears(2, "every worker left; worker 1: nan"));
}

TEST(StopVote, EveryWorkerFailedAndLeftEndsTheRunWithTheFirstReason) {
  EXPECT_EQ(verdicts({{Kind::Left, "worker 0 failed"}, {Kind::Left, "worker 1 failed"}}),
            everyone_hears(2, "throws: every worker failed and left the run; the first: worker 0 failed"));
}

TEST(StopVote, ReasonsKeepEveryByte) {
  const std::string odd = std::string("D d L T \0 x", 11);  // what the old text prefixes were
  EXPECT_EQ(verdicts({{}, {Kind::Diverged, odd}}), everyone_hears(2, odd));
}

TEST(StepDivergence, NamesANonFiniteLossOrSaturatedGradientsOnce) {
  uint64_t saturated = 0;
  EXPECT_EQ(step_divergence(1, 0.5f, 7, 0, saturated), "");
  EXPECT_NE(step_divergence(1, std::numeric_limits<float>::quiet_NaN(), 7, 0, saturated)
                .find("worker 1: the loss became nan at step 7"),
            std::string::npos);
  EXPECT_EQ(
      step_divergence(2, 0.5f, 8, 3, saturated),
      "worker 2: 3 gradient value(s) beyond fp16's range (+-65504) at step 8 (diverged; try a lower learning "
      "rate)");
  EXPECT_EQ(saturated, 3u);
  EXPECT_EQ(step_divergence(2, 0.5f, 9, 3, saturated), "");  // the same ones are not counted again
}

// The default agreement after a step: the first worker's kind and reason, on every worker.
class PlainSide final : public WorkerStrategy {
 public:
  float step(const Batch&, const StepInfo&) override { return 0; }
};

TEST(AgreeToStop, EveryWorkerHearsTheFirstStopWithItsKind) {
  const std::vector<StepStop> said{
      {}, {StepStop::Kind::CheckpointFailed, "disk full"}, {StepStop::Kind::Diverged, "worker 2: nan"}};
  std::vector<StepStop> heard(said.size());
  const auto errors = test::run_local_workers(3, kVoteTimeout, [&](int r, LocalCommunicator& comm) {
    PlainSide side;
    heard[static_cast<size_t>(r)] = side.agree_to_stop(comm, said[static_cast<size_t>(r)]);
  });
  for (size_t r = 0; r < said.size(); ++r) {
    EXPECT_EQ(errors[r], "");
    EXPECT_EQ(heard[r].kind, StepStop::Kind::CheckpointFailed);
    EXPECT_EQ(heard[r].why, "disk full");
  }
}

TEST(AgreeToStop, NobodyStoppingIsNone) {
  std::vector<StepStop> heard(2, StepStop{StepStop::Kind::Diverged, "x"});
  test::run_local_workers(2, kVoteTimeout, [&](int r, LocalCommunicator& comm) {
    PlainSide side;
    heard[static_cast<size_t>(r)] = side.agree_to_stop(comm, {});
  });
  for (const auto& h : heard) EXPECT_FALSE(h.any());
}

}  // namespace
}  // namespace ptrain
