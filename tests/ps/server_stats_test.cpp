// ServerStats: the staleness histogram's summaries, and the message a shard
// sends worker 0 at Finish (round trip, and rejection of malformed bytes).
#include "ps/server_stats.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "core/error.hpp"

namespace ptrain {
namespace {

ServerStats with_histogram(std::vector<uint64_t> staleness) {
  ServerStats s;
  s.staleness.bins = std::move(staleness);
  return s;
}

std::vector<uint64_t> words_of(std::span<const std::byte> bytes) {
  std::vector<uint64_t> words(bytes.size() / sizeof(uint64_t));
  std::memcpy(words.data(), bytes.data(), words.size() * sizeof(uint64_t));
  return words;
}

std::vector<std::byte> bytes_of(const std::vector<uint64_t>& words) {
  std::vector<std::byte> bytes(words.size() * sizeof(uint64_t));
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

void expect_malformed(std::span<const std::byte> bytes, const std::string& what) {
  try {
    ServerStats::deserialize(bytes);
    FAIL() << what << ": accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "parameter server statistics: malformed message") << what;
  }
}

TEST(ServerStats, RecordStalenessCountsEachGradientInItsBin) {
  ServerStats s;
  for (uint64_t v : {0, 3, 3, 1}) s.record_staleness(v);
  EXPECT_EQ(s.staleness.bins, (std::vector<uint64_t>{1, 1, 0, 2}));
  EXPECT_EQ(s.applied(), 4u);
  EXPECT_DOUBLE_EQ(s.mean_staleness(), (0.0 + 3 + 3 + 1) / 4);
  EXPECT_EQ(s.max_staleness(), 3u);
  EXPECT_EQ(s.staleness_quantile(0.25), 0u);  // 1 of 4 at or below 0
  EXPECT_EQ(s.staleness_quantile(0.5), 1u);   // 2 of 4 at or below 1
  EXPECT_EQ(s.staleness_quantile(0.99), 3u);
  EXPECT_EQ(s.staleness_quantile(1.0), 3u);
  // Recording into an existing bin does not grow the histogram.
  s.record_staleness(2);
  EXPECT_EQ(s.staleness.bins, (std::vector<uint64_t>{1, 1, 1, 2}));
}

TEST(ServerStats, EmptyHistogramSummarizesAsZero) {
  for (const auto& s : {ServerStats{}, with_histogram({0, 0, 0})}) {
    EXPECT_EQ(s.applied(), 0u);
    EXPECT_EQ(s.mean_staleness(), 0.0);
    EXPECT_EQ(s.staleness_quantile(0.5), 0u);
    EXPECT_EQ(s.staleness_quantile(0.99), 0u);
    EXPECT_EQ(s.staleness_quantile(1.0), 0u);
    EXPECT_EQ(s.max_staleness(), 0u);
  }
}

TEST(ServerStats, QuantilesAndMaxIgnoreTrailingEmptyBins) {
  const auto s = with_histogram({0, 2, 0, 0});
  EXPECT_EQ(s.applied(), 2u);
  EXPECT_DOUBLE_EQ(s.mean_staleness(), 1.0);
  EXPECT_EQ(s.staleness_quantile(0.5), 1u);
  EXPECT_EQ(s.staleness_quantile(1.0), 1u);  // not the histogram's last bin
  EXPECT_EQ(s.max_staleness(), 1u);
}

TEST(ServerStats, NinetyNinthPercentileSeesTheTailOnlyWhenItIsOverOnePercent) {
  // 99 of 100 fresh: the 99th percentile is 0, the maximum the one outlier.
  const auto one_outlier = with_histogram({99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
  EXPECT_EQ(one_outlier.staleness_quantile(0.99), 0u);
  EXPECT_EQ(one_outlier.staleness_quantile(0.5), 0u);
  EXPECT_EQ(one_outlier.staleness_quantile(1.0), 10u);
  EXPECT_EQ(one_outlier.max_staleness(), 10u);
  EXPECT_DOUBLE_EQ(one_outlier.mean_staleness(), 0.1);
  // 98 of 100 fresh: now the 99th percentile falls in the tail.
  const auto two_outliers = with_histogram({98, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2});
  EXPECT_EQ(two_outliers.staleness_quantile(0.99), 10u);
  EXPECT_EQ(two_outliers.staleness_quantile(0.98), 0u);
  // The median of 1,1,2,2,2,5 (sorted) is at 2; of 1,1,1,2,2,5 at 1.
  EXPECT_EQ(with_histogram({0, 2, 3, 0, 0, 1}).staleness_quantile(0.5), 2u);
  EXPECT_EQ(with_histogram({0, 3, 2, 0, 0, 1}).staleness_quantile(0.5), 1u);
}

TEST(ServerStats, SerializeDeserializeRoundTrips) {
  ServerStats s;
  s.staleness.bins = {5, 0, 7, 1};
  s.updates = 13;
  s.dropped_late = 2;
  s.dropped_stale = 3;
  s.max_clock_gap = 4;
  s.left_workers = {3, 1};
  s.step_batches.bins = {0, 9, 2};
  s.pushed_bytes = 5;
  s.pulled = {6, 7, 8, 9};
  const ServerStats back = ServerStats::deserialize(s.serialize());
  EXPECT_EQ(back.staleness.bins, s.staleness.bins);
  EXPECT_EQ(back.step_batches.bins, s.step_batches.bins);
  EXPECT_EQ(back.updates, 13u);
  EXPECT_EQ(back.dropped_late, 2u);
  EXPECT_EQ(back.dropped_stale, 3u);
  EXPECT_EQ(back.max_clock_gap, 4u);
  EXPECT_EQ(back.left_workers, (std::vector<uint32_t>{3, 1}));  // in order
  EXPECT_EQ(back.pushed_bytes, 5u);
  EXPECT_EQ(back.pulled.pulls, 6u);
  EXPECT_EQ(back.pulled.dense_pulls, 7u);
  EXPECT_EQ(back.pulled.dense_bytes, 8u);
  EXPECT_EQ(back.pulled.wire_bytes, 9u);

  const ServerStats empty = ServerStats::deserialize(ServerStats{}.serialize());
  EXPECT_TRUE(empty.staleness.bins.empty());
  EXPECT_TRUE(empty.left_workers.empty());
  EXPECT_EQ(empty.updates, 0u);
  EXPECT_EQ(empty.dropped_late + empty.dropped_stale + empty.max_clock_gap, 0u);
}

TEST(ServerStats, DeserializeRejectsMalformedMessages) {
  ServerStats s;
  s.staleness.bins = {5, 0, 7};
  s.updates = 12;
  s.left_workers = {2};
  const auto good = s.serialize();
  ASSERT_NO_THROW(ServerStats::deserialize(good));

  expect_malformed({}, "empty");
  // Not a whole number of words.
  expect_malformed(std::span(good).first(good.size() - 1), "a byte short");
  auto longer = good;
  longer.push_back(std::byte{0});
  expect_malformed(longer, "a byte over");
  // Every shorter run of whole words stops inside a field.
  for (size_t words = 0; words * sizeof(uint64_t) < good.size(); ++words)
    expect_malformed(std::span(good).first(words * sizeof(uint64_t)), std::to_string(words) + " words");
  auto trailing = words_of(good);
  trailing.push_back(0);
  expect_malformed(bytes_of(trailing), "a trailing word");

  // Lengths that promise more than the message holds (and must not allocate them).
  constexpr size_t kHistogram = 9;  // the staleness histogram's length, after the nine counters
  auto huge_histogram = words_of(good);
  huge_histogram[kHistogram] = std::numeric_limits<uint64_t>::max();
  expect_malformed(bytes_of(huge_histogram), "histogram length 2^64 - 1");
  auto long_histogram = words_of(good);
  long_histogram[kHistogram] = 4;  // one bin more than there is: the left count is read as a bin
  expect_malformed(bytes_of(long_histogram), "histogram length one over");
  auto huge_left = words_of(good);
  huge_left[kHistogram + 4] = uint64_t{1} << 62;
  expect_malformed(bytes_of(huge_left), "left count 2^62");
  auto short_histogram = words_of(good);
  short_histogram[kHistogram] = 2;  // one bin less: a word is left over
  expect_malformed(bytes_of(short_histogram), "histogram length one under");
}

}  // namespace
}  // namespace ptrain
