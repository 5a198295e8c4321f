// The shared-parameter algorithms under real threads, checked by counting: a
// gradient of -1 with lr 1 adds 1 to every parameter, so the parameters tell
// how many updates reached the shared vector, and whether any was lost.
#include "shm/shared_parameters.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "shm/leashed_parameters.hpp"

namespace ptrain {
namespace {

constexpr size_t kSize = 64;

struct Totals {
  ThreadCounters counters;
  uint64_t max_staleness = 0;
};

// `threads` threads each read, then apply a -1 gradient `steps` times.
Totals hammer(SharedParameters& shared, int threads, int steps, BackoffConfig backoff = {}) {
  std::vector<Totals> per(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<float> local(kSize), grad(kSize, -1.0f);
      Backoff b(backoff, 100 + t);
      for (int s = 0; s < steps; ++s) {
        const uint64_t v = shared.read(local, b, per[t].counters);
        std::this_thread::yield();
        const ApplyOutcome o = shared.apply(grad, 1.0f, v, b, per[t].counters, {});
        if (o.applied) per[t].max_staleness = std::max(per[t].max_staleness, o.staleness);
      }
    });
  for (auto& th : pool) th.join();
  Totals sum;
  for (const auto& p : per) {
    sum.counters.applied += p.counters.applied;
    sum.counters.dropped += p.counters.dropped;
    sum.counters.failed_swaps += p.counters.failed_swaps;
    sum.counters.contended_locks += p.counters.contended_locks;
    sum.max_staleness = std::max(sum.max_staleness, p.max_staleness);
  }
  return sum;
}

std::unique_ptr<SharedParameters> make(ShmAlgorithm algorithm, int threads, std::vector<float>& initial,
                                       int persistence = -1) {
  ShmConfig c;
  c.algorithm = algorithm;
  c.threads = threads;
  c.persistence = persistence;
  return make_shared_parameters(c, initial);
}

std::vector<float> snapshot(const SharedParameters& shared) {
  std::vector<float> out(kSize);
  shared.snapshot(out);
  return out;
}

TEST(SharedParameters, ConsistentAlgorithmsApplyEveryUpdateExactlyOnce) {
  for (auto algorithm : {ShmAlgorithm::Mutex, ShmAlgorithm::RwLock, ShmAlgorithm::Leashed}) {
    SCOPED_TRACE(to_string(algorithm));
    std::vector<float> initial(kSize, 0.0f);
    auto shared = make(algorithm, 4, initial);
    const Totals t = hammer(*shared, 4, 500);
    EXPECT_EQ(t.counters.applied, 2000u);
    EXPECT_EQ(t.counters.dropped, 0u);
    EXPECT_EQ(shared->updates(), 2000u);
    for (float p : snapshot(*shared)) ASSERT_EQ(p, 2000.0f);
    EXPECT_LE(t.max_staleness, 2000u);
  }
}

TEST(SharedParameters, BackoffKeepsTheUpdatesExact) {
  BackoffConfig b;
  b.kind = BackoffKind::ExponentialJitter;
  b.min_us = 1;
  b.max_us = 20;
  for (auto algorithm : {ShmAlgorithm::Mutex, ShmAlgorithm::RwLock, ShmAlgorithm::Leashed}) {
    SCOPED_TRACE(to_string(algorithm));
    std::vector<float> initial(kSize, 0.0f);
    auto shared = make(algorithm, 3, initial);
    const Totals t = hammer(*shared, 3, 300, b);
    EXPECT_EQ(t.counters.applied, 900u);
    for (float p : snapshot(*shared)) ASSERT_EQ(p, 900.0f);
  }
}

TEST(SharedParameters, HogwildMayLoseUpdatesButNeverInventsThem) {
  std::vector<float> initial(kSize, 0.0f);
  auto shared = make(ShmAlgorithm::Hogwild, 4, initial);
  const Totals t = hammer(*shared, 4, 500);
  EXPECT_EQ(t.counters.applied, 2000u);
  EXPECT_EQ(shared->updates(), 2000u);
  for (float p : snapshot(*shared)) {
    ASSERT_LE(p, 2000.0f);
    ASSERT_GE(p, 500.0f);  // each thread's own updates follow one another
  }
}

TEST(SharedParameters, SequentialTrainsTheReplicaInPlace) {
  std::vector<float> replica(kSize, 1.0f);
  auto shared = make(ShmAlgorithm::Seq, 1, replica);
  Backoff b({}, 1);
  ThreadCounters counters;
  std::vector<float> grad(kSize, 0.5f);
  const uint64_t v = shared->read(replica, b, counters);
  const ApplyOutcome o = shared->apply(grad, 2.0f, v, b, counters, {});
  EXPECT_TRUE(o.applied);
  EXPECT_EQ(o.staleness, 0u);
  EXPECT_EQ(replica[0], 0.0f);  // 1 - 2 * 0.5, in the replica itself
  EXPECT_EQ(shared->updates(), 1u);
}

TEST(SharedParameters, HogwildRefreshesTheReplicaInTheSamePass) {
  std::vector<float> initial(kSize, 3.0f), replica(kSize, -7.0f), grad(kSize, 1.0f);
  auto shared = make(ShmAlgorithm::Hogwild, 1, initial);
  Backoff b({}, 1);
  ThreadCounters counters;
  const ApplyOutcome o = shared->apply(grad, 0.5f, 0, b, counters, replica);
  EXPECT_TRUE(o.refreshed);
  EXPECT_EQ(o.version, 1u);
  EXPECT_EQ(replica, std::vector<float>(kSize, 2.5f));
  EXPECT_EQ(snapshot(*shared), replica);
  // The others leave the replica alone.
  for (auto algorithm : {ShmAlgorithm::Mutex, ShmAlgorithm::RwLock, ShmAlgorithm::Leashed}) {
    auto other = make(algorithm, 1, initial);
    std::vector<float> untouched(kSize, -7.0f);
    EXPECT_FALSE(other->apply(grad, 0.5f, 0, b, counters, untouched).refreshed);
    EXPECT_EQ(untouched, std::vector<float>(kSize, -7.0f));
  }
}

TEST(SharedParameters, LockStalenessCountsTheUpdatesInBetween) {
  for (auto algorithm : {ShmAlgorithm::Mutex, ShmAlgorithm::RwLock, ShmAlgorithm::Hogwild, ShmAlgorithm::Leashed}) {
    SCOPED_TRACE(to_string(algorithm));
    std::vector<float> initial(kSize, 0.0f), local(kSize), grad(kSize, -1.0f);
    auto shared = make(algorithm, 2, initial);
    Backoff b({}, 1);
    ThreadCounters counters;
    const uint64_t old = shared->read(local, b, counters);
    for (int i = 0; i < 3; ++i) shared->apply(grad, 1.0f, shared->read(local, b, counters), b, counters, {});
    EXPECT_EQ(shared->apply(grad, 1.0f, old, b, counters, {}).staleness, 3u);
  }
}

}  // namespace
}  // namespace ptrain
