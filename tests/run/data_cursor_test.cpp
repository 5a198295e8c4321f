// DataCursor: a worker's samples come in the same order however its steps
// group the base batches (a stale-gradient rule's larger batches), across
// passes, and a cursor sought to a count of base batches goes on from there.
#include "run/data_cursor.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace ptrain {
namespace {

std::vector<size_t> take(DataCursor& cursor, const std::vector<size_t>& counts) {
  std::vector<size_t> stream;
  for (const size_t c : counts) {
    const auto indices = cursor.next(c);
    EXPECT_EQ(indices.size(), c * 4);
    stream.insert(stream.end(), indices.begin(), indices.end());
  }
  return stream;
}

TEST(DataCursor, GroupedBaseBatchesGiveTheSameSamplesInTheSameOrderAcrossPasses) {
  // 3 workers, batch 4: 100 samples are 33 a worker, 8 base batches a pass.
  ShardedSampler one_at_a_time_sampler(100, 3, 1, 4, 42), grouped_sampler(100, 3, 1, 4, 42);
  DataCursor one_at_a_time(one_at_a_time_sampler), grouped(grouped_sampler);
  const std::vector<size_t> groups = {1, 3, 2, 4, 1, 5, 2};  // 18: into the third pass
  const auto expected = take(one_at_a_time, std::vector<size_t>(18, 1));
  EXPECT_EQ(take(grouped, groups), expected);
  EXPECT_EQ(grouped.taken(), 18u);
  // The second pass is another shuffle: grouping did not just repeat the first.
  EXPECT_NE(std::vector<size_t>(expected.begin(), expected.begin() + 32),
            std::vector<size_t>(expected.begin() + 32, expected.begin() + 64));

  ShardedSampler resumed_sampler(100, 3, 1, 4, 42);
  DataCursor resumed(resumed_sampler);
  resumed.seek(9);  // a checkpoint after 9 base batches, inside the second pass
  EXPECT_EQ(take(resumed, {2, 7}), std::vector<size_t>(expected.begin() + 9 * 4, expected.end()));
  EXPECT_EQ(resumed.taken(), 18u);
}

}  // namespace
}  // namespace ptrain
