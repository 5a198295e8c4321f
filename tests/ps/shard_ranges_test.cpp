#include "ps/shard_ranges.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace ptrain {
namespace {

TEST(ShardRanges, CoverEveryParameterExactlyOnceInBalancedRanges) {
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{101}, size_t{7919}, size_t{1000003}})
    for (int s = 1; s <= 8; ++s) {
      if (n < static_cast<size_t>(s)) continue;
      const auto ranges = shard_ranges(n, s);
      ASSERT_EQ(ranges.size(), static_cast<size_t>(s));
      size_t next = 0, smallest = n, largest = 0;
      for (const auto& r : ranges) {
        EXPECT_EQ(r.begin, next) << n << " parameters, " << s << " shards";  // contiguous, no gap, no overlap
        next = r.end;
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
      }
      EXPECT_EQ(next, n) << n << " parameters, " << s << " shards";
      EXPECT_GE(smallest, 1u);
      EXPECT_LE(largest - smallest, 1u) << n << " parameters, " << s << " shards";
    }
}

TEST(ShardRanges, EachParameterHasItsShard) {
  for (size_t n : {size_t{7}, size_t{101}})
    for (int s : {1, 2, 3, 7}) {
      const auto ranges = shard_ranges(n, s);
      for (size_t i = 0; i < n; ++i) {
        const size_t shard = shard_of(ranges, i);
        ASSERT_LT(shard, ranges.size());
        EXPECT_GE(i, ranges[shard].begin);
        EXPECT_LT(i, ranges[shard].end);
      }
      EXPECT_THROW(shard_of(ranges, n), Error);
    }
}

TEST(ShardRanges, FewerParametersThanServersIsAnError) {
  try {
    shard_ranges(3, 5);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "strategy.servers 5: the model has only 3 parameter(s), fewer than the servers");
  }
  EXPECT_THROW(shard_ranges(0, 1), Error);
  EXPECT_THROW(shard_ranges(10, 0), Error);
}

}  // namespace
}  // namespace ptrain
