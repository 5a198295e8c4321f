#include "shm/backoff.hpp"

#include <gtest/gtest.h>

namespace ptrain {
namespace {

TEST(Backoff, ExponentialDoublesUpToTheBoundAndResets) {
  Backoff b({BackoffKind::Exponential, 2, 10}, 1);
  EXPECT_EQ(b.next_wait_us(), 2);
  EXPECT_EQ(b.next_wait_us(), 4);
  EXPECT_EQ(b.next_wait_us(), 8);
  EXPECT_EQ(b.next_wait_us(), 10);
  EXPECT_EQ(b.next_wait_us(), 10);
  b.reset();
  EXPECT_EQ(b.next_wait_us(), 2);
}

TEST(Backoff, JitterWaitsAUniformFractionOfTheDelay) {
  Backoff b({BackoffKind::ExponentialJitter, 100, 100}, 7);
  double sum = 0, lo = 1e9, hi = 0;
  for (int i = 0; i < 2000; ++i) {
    const double w = b.next_wait_us();
    sum += w, lo = std::min(lo, w), hi = std::max(hi, w);
  }
  EXPECT_GE(lo, 0);
  EXPECT_LT(hi, 100);
  EXPECT_NEAR(sum / 2000, 50, 3);
}

TEST(Backoff, WaitCountsAndNoneNeverWaits) {
  Backoff none({}, 1);
  EXPECT_FALSE(none.enabled());
  none.wait();
  EXPECT_EQ(none.waits(), 0u);
  Backoff exp({BackoffKind::Exponential, 1, 4}, 1);
  exp.wait();
  exp.wait();
  EXPECT_EQ(exp.waits(), 2u);
  EXPECT_DOUBLE_EQ(exp.waited_us(), 3);
}

}  // namespace
}  // namespace ptrain
