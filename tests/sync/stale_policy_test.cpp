// --stale-policy: parsing (and its errors), printing, and the rule a shard
// applies to a gradient of a given staleness.
#include "sync/stale_policy.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace ptrain {
namespace {

TEST(StalePolicy, ParsesEachPolicy) {
  EXPECT_EQ(parse_stale_policy("none").kind, StalePolicy::Kind::None);
  EXPECT_EQ(parse_stale_policy("scale").kind, StalePolicy::Kind::Scale);
  const auto drop0 = parse_stale_policy("drop:0");
  EXPECT_EQ(drop0.kind, StalePolicy::Kind::Drop);
  EXPECT_EQ(drop0.drop_above, 0u);
  const auto drop7 = parse_stale_policy("drop:7");
  EXPECT_EQ(drop7.kind, StalePolicy::Kind::Drop);
  EXPECT_EQ(drop7.drop_above, 7u);
  EXPECT_EQ(parse_stale_policy("drop:18446744073709551615").drop_above, UINT64_MAX);
}

TEST(StalePolicy, RejectsAnythingElseNamingTheFlagAndTheValue) {
  for (const std::string bad :
       {"drop:", "drop:-1", "drop:x", "drop:3x", "drop: 3", "drop:+3", "drop:1.5",
        "drop:18446744073709551616", "drop", "Drop:1", "NONE", "scale ", " none", "", "drop:3:4", "batch:0",
        "batch:", "batch", "batch:-2", "batch:2.5", "batch:2x"}) {
    try {
      parse_stale_policy(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const Error& e) {
      const std::string prefix = "strategy.stale_policy '" + bad + "'";
      EXPECT_EQ(std::string(e.what()).substr(0, prefix.size()), prefix) << e.what();
    }
  }
}

TEST(StalePolicy, ToStringRoundTrips) {
  for (const std::string text : {"none", "scale", "drop:0", "drop:7", "drop:1000", "batch:1", "batch:4"})
    EXPECT_EQ(to_string(parse_stale_policy(text)), text);
  EXPECT_EQ(to_string(StalePolicy{StalePolicy::Kind::Drop, 42}), "drop:42");
  EXPECT_EQ(to_string(StalePolicy{}), "none");
}

TEST(StalePolicy, NoneAppliesEveryGradientAsItIs) {
  // An empty rule: the shard then skips the call and takes a full step.
  EXPECT_FALSE(staleness_rule(parse_stale_policy("none")));
}

TEST(StalePolicy, DropKeepsUpToTAndDropsTheStaler) {
  const auto drop3 = staleness_rule(parse_stale_policy("drop:3"));
  ASSERT_TRUE(drop3);
  for (uint64_t s = 0; s <= 3; ++s) EXPECT_EQ(drop3(s), 1.0) << "staleness " << s;
  for (uint64_t s : {uint64_t{4}, uint64_t{5}, uint64_t{1000}, UINT64_MAX}) EXPECT_EQ(drop3(s), 0.0) << s;
  const auto drop0 = staleness_rule(parse_stale_policy("drop:0"));
  ASSERT_TRUE(drop0);
  EXPECT_EQ(drop0(0), 1.0);
  EXPECT_EQ(drop0(1), 0.0);
}

TEST(StalePolicy, ScaleDividesTheStepByOnePlusStaleness) {
  const auto scale = staleness_rule(parse_stale_policy("scale"));
  ASSERT_TRUE(scale);
  EXPECT_EQ(scale(0), 1.0);
  EXPECT_EQ(scale(1), 0.5);
  EXPECT_EQ(scale(3), 0.25);
  EXPECT_DOUBLE_EQ(scale(2), 1.0 / 3);
  EXPECT_DOUBLE_EQ(scale(9), 0.1);
  EXPECT_GT(scale(1000000), 0.0);  // never dropped, however stale
}

TEST(StalePolicy, BatchGrowsTheNextStepByARoundOfTheWorkersItMissedUpToK) {
  const StalePolicy batch4 = parse_stale_policy("batch:4");
  EXPECT_EQ(batch4.kind, StalePolicy::Kind::Batch);
  EXPECT_EQ(batch4.batch_max, 4u);
  EXPECT_FALSE(staleness_rule(batch4));  // the stale gradient itself is applied as it is
  // W = 4: up to 3 updates missed is async's usual, one base batch; each full round of 4 adds one.
  const std::vector<size_t> want = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4};
  for (uint64_t s = 0; s < want.size(); ++s) EXPECT_EQ(step_batches(batch4, s, 4), want[s]) << "staleness " << s;
  EXPECT_EQ(step_batches(batch4, UINT64_MAX, 4), 4u);
  EXPECT_EQ(step_batches(batch4, UINT64_MAX, 1), 4u);
  EXPECT_EQ(step_batches(batch4, 5, 1), 4u);
  EXPECT_EQ(step_batches(batch4, 2, 1), 3u);
  EXPECT_EQ(step_batches(parse_stale_policy("batch:1"), 100, 2), 1u);
  for (const char* other : {"none", "scale", "drop:2"})
    EXPECT_EQ(step_batches(parse_stale_policy(other), 100, 2), 1u) << other;
}

}  // namespace
}  // namespace ptrain
