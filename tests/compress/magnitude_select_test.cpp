// kth_largest_key against a sort, on both of its paths (a heap for ranks far
// above the median, nth_element otherwise), with ties and edge sizes.
#include "compress/magnitude_select.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "core/rng.hpp"

namespace ptrain {
namespace {

TEST(KthLargestKey, IsTheRankThOfTheSortedKeysOnBothPaths) {
  Rng rng(17);
  std::vector<uint32_t> scratch;
  for (const size_t n : {1, 2, 15, 16, 17, 100, 4096, 100000}) {
    for (const uint32_t distinct : {1u, 3u, 1000u, 0x7fffffffu}) {  // ties, few values, and all apart
      std::vector<uint32_t> keys(n);
      for (auto& k : keys) k = static_cast<uint32_t>(rng.below(distinct)) + (distinct > 1 ? 0 : 5);
      std::vector<uint32_t> sorted = keys;
      std::sort(sorted.begin(), sorted.end(), std::greater<>());
      for (const size_t rank : {size_t{1}, size_t{2}, n / 100 + 1, n / 16, n / 16 + 1, n / 2 + 1, n}) {
        if (rank < 1 || rank > n) continue;
        std::vector<uint32_t> work = keys;
        ASSERT_EQ(kth_largest_key(work, rank, scratch), sorted[rank - 1])
            << "n " << n << " distinct " << distinct << " rank " << rank;
        std::sort(work.begin(), work.end(), std::greater<>());
        ASSERT_EQ(work, sorted) << "the keys were lost or changed, not just reordered";
      }
    }
  }
  // Ascending and descending input: the heap's worst and best orders.
  std::vector<uint32_t> up(5000);
  for (size_t i = 0; i < up.size(); ++i) up[i] = static_cast<uint32_t>(i / 3);
  std::vector<uint32_t> down(up.rbegin(), up.rend());
  EXPECT_EQ(kth_largest_key(up, 10, scratch), 1663u);
  EXPECT_EQ(kth_largest_key(down, 10, scratch), 1663u);
}

}  // namespace
}  // namespace ptrain
