#include "data/sharded_sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace ptrain {
namespace {

std::vector<size_t> sorted(std::span<const size_t> indices) {
  std::vector<size_t> v(indices.begin(), indices.end());
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ShardedSampler, SizesDropTheTail) {
  const ShardedSampler sampler(103, 4, 3, 5, 1);
  EXPECT_EQ(sampler.shard_size(), 25u);
  EXPECT_EQ(sampler.batches_per_epoch(), 5u);
  EXPECT_EQ(sampler.batch(0).size(), 5u);
}

TEST(ShardedSampler, WorkersCoverDisjointShardsOfAnEpoch) {
  const size_t n = 1000, workers = 3, batch = 7;
  std::set<size_t> seen;
  size_t total = 0;
  for (size_t r = 0; r < workers; ++r) {
    ShardedSampler sampler(n, workers, r, batch, 99);
    sampler.start_epoch(2);
    for (size_t b = 0; b < sampler.batches_per_epoch(); ++b)
      for (size_t i : sampler.batch(b)) {
        EXPECT_LT(i, n);
        seen.insert(i);
        ++total;
      }
  }
  EXPECT_EQ(total, workers * (n / workers / batch) * batch);
  EXPECT_EQ(seen.size(), total) << "an index was given to two workers or twice to one";
}

TEST(ShardedSampler, DeterministicPerSeedAndEpoch) {
  ShardedSampler a(500, 2, 1, 10, 7), b(500, 2, 1, 10, 7), other_seed(500, 2, 1, 10, 8);
  a.start_epoch(3);
  b.start_epoch(3);
  other_seed.start_epoch(3);
  const std::vector<size_t> first(a.batch(4).begin(), a.batch(4).end());
  EXPECT_TRUE(std::ranges::equal(a.batch(4), b.batch(4)));
  EXPECT_FALSE(std::ranges::equal(a.batch(4), other_seed.batch(4)));
  a.start_epoch(4);
  EXPECT_FALSE(std::ranges::equal(a.batch(4), first)) << "epochs must reshuffle";
  a.start_epoch(3);
  EXPECT_TRUE(std::ranges::equal(a.batch(4), first)) << "an epoch's order must be reproducible";
}

// The property that makes G workers with batch B equivalent to one worker with
// batch G*B in synchronous data parallelism.
TEST(ShardedSampler, WorkersTogetherMatchOneWorkerWithTheGlobalBatch) {
  const size_t n = 1234, batch = 8;
  const uint64_t seed = 2024;
  for (size_t workers : {1, 2, 3, 4, 8}) {
    ShardedSampler single(n, 1, 0, workers * batch, seed);
    std::vector<ShardedSampler> shards;
    for (size_t r = 0; r < workers; ++r) shards.emplace_back(n, workers, r, batch, seed);
    for (size_t epoch : {0, 1, 5}) {
      single.start_epoch(epoch);
      for (auto& s : shards) s.start_epoch(epoch);
      ASSERT_EQ(shards[0].batches_per_epoch(), single.batches_per_epoch());
      for (size_t b = 0; b < single.batches_per_epoch(); ++b) {
        std::vector<size_t> together;
        for (const auto& s : shards) together.insert(together.end(), s.batch(b).begin(), s.batch(b).end());
        std::sort(together.begin(), together.end());
        EXPECT_EQ(together, sorted(single.batch(b)))
            << workers << " workers, epoch " << epoch << ", batch " << b;
      }
    }
  }
}

TEST(ShardedSampler, RejectsBadArguments) {
  EXPECT_THROW(ShardedSampler(100, 0, 0, 1, 1), Error);
  EXPECT_THROW(ShardedSampler(100, 2, 2, 1, 1), Error);
  EXPECT_THROW(ShardedSampler(100, 2, 0, 0, 1), Error);
  EXPECT_NO_THROW(ShardedSampler(100, 2, 0, 50, 1));
  try {
    ShardedSampler(200, 2, 0, 512, 1);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run.batch 512 is larger than each worker's shard of 100"),
              std::string::npos)
        << e.what();
  }
  const ShardedSampler sampler(100, 1, 0, 10, 1);
  EXPECT_THROW(sampler.batch(10), Error);
}

// A token stream: every worker's rows run on from one batch to the next,
// each epoch alike; G workers of batch B read the rows one worker of G*B does.
TEST(ShardedSampler, AStreamIsReadInOrderAlongEachRow) {
  const size_t n = 103, workers = 2, batch = 3;  // 6 rows of 17 pieces, 1 left over
  std::vector<std::vector<size_t>> together(17);
  for (size_t r = 0; r < workers; ++r) {
    ShardedSampler sampler(n, workers, r, batch, 7, SampleOrder::Stream);
    EXPECT_EQ(sampler.batches_per_epoch(), 17u);
    EXPECT_EQ(sampler.shard_size(), 51u);
    for (size_t epoch = 0; epoch < 2; ++epoch) {
      sampler.start_epoch(epoch);
      for (size_t k = 0; k < 17; ++k) {
        const auto b = sampler.batch(k);
        ASSERT_EQ(b.size(), batch);
        for (size_t j = 0; j < batch; ++j) {
          EXPECT_EQ(b[j], (r * batch + j) * 17 + k);  // row r*B + j, piece k
          if (k > 0) {
            EXPECT_EQ(b[j], sampler.batch(k - 1)[j] + 1);
          }
        }
        if (epoch == 0) together[k].insert(together[k].end(), b.begin(), b.end());
      }
    }
  }
  const ShardedSampler one(n, 1, 0, workers * batch, 7, SampleOrder::Stream);
  for (size_t k = 0; k < 17; ++k) {
    const auto b = one.batch(k);
    EXPECT_EQ(together[k], std::vector<size_t>(b.begin(), b.end())) << k;
  }
  EXPECT_THROW(ShardedSampler(5, 2, 0, 3, 7, SampleOrder::Stream), Error);  // 6 rows, 5 pieces
}

}  // namespace
}  // namespace ptrain
