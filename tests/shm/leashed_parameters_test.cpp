// Leashed-SGD's guarantees: a single chain of versions, the persistence bound,
// and reclamation (every vector back in the pool; ASan checks for leaks).
#include "shm/leashed_parameters.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace ptrain {
namespace {

constexpr size_t kLeashedSize = 256;
// A gradient of -1 then adds 1 to every parameter.
const OptimizerConfig kSgd{.kind = OptimizerKind::Sgd, .lr = 1.0f};

TEST(LeashedParameters, PublishesOneChainOfVersions) {
  std::vector<float> initial(kLeashedSize, 0.0f);
  const int threads = 4, steps = 400;
  LeashedParameters shared(initial, threads, -1, kSgd);
  std::atomic<uint64_t> bad_links{0};
  std::vector<ThreadCounters> counters(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<float> local(kLeashedSize), grad(kLeashedSize, -1.0f);
      Backoff b({}, t);
      for (int s = 0; s < steps; ++s) {
        const uint64_t v = shared.read(local, b, counters[t]);
        // A consistent copy: every element has seen exactly `v` updates.
        for (float x : local)
          if (x != static_cast<float>(v)) bad_links.fetch_add(1, std::memory_order_relaxed);
        shared.apply(grad, v, t, b, counters[t], {});
      }
    });
  for (auto& th : pool) th.join();
  uint64_t applied = 0, failed = 0;
  for (const auto& c : counters) applied += c.applied, failed += c.failed_swaps;
  EXPECT_EQ(bad_links.load(), 0u);
  EXPECT_EQ(applied, uint64_t{threads * steps});
  // Version n has parent n - 1 and holds exactly n updates: no update was lost or applied twice.
  EXPECT_EQ(shared.updates(), applied);
  EXPECT_EQ(shared.latest_parent(), applied - 1);
  std::vector<float> final_params(kLeashedSize);
  shared.snapshot(final_params);
  for (float p : final_params) ASSERT_EQ(p, static_cast<float>(applied));
  // Every vector but the latest is back in the pool.
  EXPECT_EQ(shared.pool().free_count(), shared.pool().capacity() - 1);
  RecordProperty("failed_swaps", static_cast<int>(failed));
}

// `threads` threads each read, then apply a -1 gradient, `steps` times; the counters summed.
ThreadCounters contend(LeashedParameters& shared, size_t size, int threads, int steps) {
  std::vector<ThreadCounters> counters(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<float> local(size), grad(size, -1.0f);
      Backoff b({}, t);
      for (int s = 0; s < steps; ++s) shared.apply(grad, shared.read(local, b, counters[t]), t, b, counters[t], {});
    });
  for (auto& th : pool) th.join();
  ThreadCounters sum;
  for (const auto& c : counters) sum.applied += c.applied, sum.dropped += c.dropped, sum.failed_swaps += c.failed_swaps;
  return sum;
}

TEST(LeashedParameters, PersistenceBoundDropsAndCountsUnderContention) {
  const int threads = 4, steps = 300;
  const size_t size = 1 << 14;
  // Rounds until the threads collided at least once (the first almost always does).
  for (int round = 0; round < 20; ++round) {
    LeashedParameters shared(std::vector<float>(size, 0.0f), threads, 0, kSgd);  // one attempt per gradient
    const ThreadCounters c = contend(shared, size, threads, steps);
    // With persistence 0 every failed swap drops its gradient; each gradient is applied or dropped.
    EXPECT_EQ(c.dropped, c.failed_swaps);
    EXPECT_EQ(c.applied + c.dropped, uint64_t{threads * steps});
    EXPECT_EQ(shared.updates(), c.applied);
    std::vector<float> final_params(size);
    shared.snapshot(final_params);
    for (float p : final_params) ASSERT_EQ(p, static_cast<float>(c.applied));
    EXPECT_EQ(shared.pool().free_count(), shared.pool().capacity() - 1);
    if (c.dropped > 0) return;
  }
  FAIL() << "4 threads never collided in 20 rounds of 300 updates";
}

TEST(LeashedParameters, UnboundedPersistenceRetriesUntilApplied) {
  const int threads = 4, steps = 300;
  const size_t size = 1 << 14;
  LeashedParameters shared(std::vector<float>(size, 0.0f), threads, -1, kSgd);
  const ThreadCounters c = contend(shared, size, threads, steps);
  EXPECT_EQ(c.dropped, 0u);
  EXPECT_EQ(c.applied, uint64_t{threads * steps});
  EXPECT_EQ(shared.updates(), c.applied);
}

}  // namespace
}  // namespace ptrain
