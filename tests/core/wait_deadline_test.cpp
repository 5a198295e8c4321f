#include "core/wait_deadline.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace ptrain {
namespace {

using namespace std::chrono_literals;

TEST(WaitDeadline, PassesAfterItsTimeoutWhenAskedOften) {
  WaitDeadline deadline(50ms);
  while (!deadline.passed()) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(deadline.slice(), WaitDeadline::Clock::duration::zero());
}

TEST(WaitDeadline, ZeroHasPassedAtOnce) { EXPECT_TRUE(WaitDeadline(0ms).passed()); }

TEST(WaitDeadline, TimeTheWaiterStoodStillDoesNotCount) {
  // Nobody asked for longer than a standstill: as if the process had been
  // stopped. That counts as one slice, whatever the machine's load.
  WaitDeadline deadline(300ms);
  std::this_thread::sleep_for(WaitDeadline::kSlice + WaitDeadline::kStandstill + 200ms);
  EXPECT_FALSE(deadline.passed());
  EXPECT_EQ(deadline.slice(), WaitDeadline::kSlice);
  while (!deadline.passed()) std::this_thread::sleep_for(1ms);
}

TEST(WaitDeadline, AStandstillAfterAnotherStillEndsTheWait) {
  WaitDeadline deadline(150ms);
  std::this_thread::sleep_for(WaitDeadline::kSlice + WaitDeadline::kStandstill + 50ms);
  EXPECT_FALSE(deadline.passed());
  std::this_thread::sleep_for(WaitDeadline::kSlice + WaitDeadline::kStandstill + 50ms);
  EXPECT_TRUE(deadline.passed());
}

TEST(WaitDeadline, YearsAreAYear) {
  WaitDeadline deadline(std::chrono::milliseconds::max());
  EXPECT_FALSE(deadline.passed());
  EXPECT_EQ(deadline.slice(), WaitDeadline::kSlice);
}

}  // namespace
}  // namespace ptrain
