#include "sync/gradient_buckets.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::layout_of;

// Every segment in exactly one bucket, buckets contiguous, from the last segment to the first.
void expect_a_cover(const FlatLayout& layout, const std::vector<GradientBucket>& buckets) {
  if (layout.total() == 0) {  // nothing to communicate
    EXPECT_TRUE(buckets.empty());
    return;
  }
  std::vector<int> owners(layout.segments().size(), 0);
  size_t end = layout.total();
  for (const auto& b : buckets) {
    ASSERT_LE(b.first_segment, b.last_segment);
    EXPECT_EQ(b.offset + b.count, end) << "buckets must tile the buffer from its end";
    end = b.offset;
    size_t count = 0;
    for (size_t s = b.first_segment; s <= b.last_segment; ++s) {
      owners[s]++;
      count += layout.segments()[s].numel;
    }
    EXPECT_EQ(count, b.count);
    EXPECT_EQ(layout.segments()[b.first_segment].offset, b.offset);
  }
  EXPECT_EQ(end, 0u);
  for (size_t s = 0; s < owners.size(); ++s) EXPECT_EQ(owners[s], 1) << "segment " << s;
}

TEST(GradientBuckets, FillFromTheLastTensorUpToTheSize) {
  const auto layout = layout_of({10, 20, 30, 40});  // 40, 80, 120, 160 bytes
  const auto buckets = plan_gradient_buckets(layout, 200);
  expect_a_cover(layout, buckets);
  // 160 + 120 > 200; 120 + 80 = 200 fits; 200 + 40 does not.
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].first_segment, 3u);
  EXPECT_EQ(buckets[1].first_segment, 1u);
  EXPECT_EQ(buckets[1].last_segment, 2u);
  EXPECT_EQ(buckets[2].last_segment, 0u);
}

TEST(GradientBuckets, ATensorLargerThanTheSizeIsABucketOfItsOwn) {
  const auto layout = layout_of({3, 1000, 3});
  const auto buckets = plan_gradient_buckets(layout, 64);
  expect_a_cover(layout, buckets);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[1].count, 1000u);
}

TEST(GradientBuckets, OneBucketWhenEverythingFits) {
  const auto layout = layout_of({7, 1, 13, 2});
  const auto buckets = plan_gradient_buckets(layout, size_t{25} << 20);
  expect_a_cover(layout, buckets);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].offset, 0u);
  EXPECT_EQ(buckets[0].count, 23u);
}

TEST(GradientBuckets, CoverAwkwardLayouts) {
  for (size_t bytes : {4, 5, 12, 100, 1 << 20}) {
    for (const auto& sizes : std::vector<std::vector<int64_t>>{
             {1}, {0}, {0, 5}, {5, 0}, {3, 0, 0, 4}, {1, 1, 1, 1, 1, 1, 1}, {97, 89, 83, 1, 2}}) {
      const auto layout = layout_of(sizes);
      const auto buckets = plan_gradient_buckets(layout, bytes);
      expect_a_cover(layout, buckets);
      for (const auto& b : buckets) {
        size_t tensors = 0;  // with elements: an empty one rides along with its neighbour
        for (size_t s = b.first_segment; s <= b.last_segment; ++s) tensors += layout.segments()[s].numel > 0;
        if (tensors > 1) {
          EXPECT_LE(b.count * sizeof(float), bytes);
        }
      }
    }
  }
  EXPECT_TRUE(plan_gradient_buckets(FlatLayout{}, 64).empty());
}

// An MLP's layout (weight, then bias, of each layer): a bucket ends at a
// layer's boundary, not with the next layer's bias, which backward computes
// only with that layer's weight gradient.
TEST(GradientBuckets, AModulesTensorsStayTogether) {
  FlatLayout layout;
  for (int layer = 0; layer < 4; ++layer) {
    layout.add(fmt::format("net.{}.weight", layer), {16, 16});  // 1 KiB
    layout.add(fmt::format("net.{}.bias", layer), {16});
  }
  const auto buckets = plan_gradient_buckets(layout, 1100);  // a layer fits, a layer and a bias too
  expect_a_cover(layout, buckets);
  ASSERT_EQ(buckets.size(), 4u);
  for (size_t b = 0; b < buckets.size(); ++b) {
    EXPECT_EQ(buckets[b].first_segment, 6 - 2 * b) << "bucket " << b;
    EXPECT_EQ(buckets[b].last_segment, 7 - 2 * b) << "bucket " << b;
  }
  // A module larger than a bucket is cut at its tensors.
  const auto small = plan_gradient_buckets(layout, 1024);
  expect_a_cover(layout, small);
  ASSERT_EQ(small.size(), 8u);
  // Two layers a bucket once they fit.
  const auto two = plan_gradient_buckets(layout, 2 * 1088);
  expect_a_cover(layout, two);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].first_segment, 4u);
}

TEST(GradientBuckets, ZeroBytesIsAnError) { EXPECT_THROW(plan_gradient_buckets(layout_of({4}), 0), Error); }

}  // namespace
}  // namespace ptrain
