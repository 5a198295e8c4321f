// The shared-parameter algorithms under real threads, checked by counting: a
// gradient of -1 with lr 1 adds 1 to every parameter, so the parameters tell
// how many updates reached the shared vector, and whether any was lost.
#include "shm/shared_parameters.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/rng.hpp"
#include "core/state_stream.hpp"
#include "shm/hogwild_parameters.hpp"
#include "shm/leashed_parameters.hpp"
#include "state_records.hpp"
#include "shm_strategy_configs.hpp"
#include "test_support.hpp"

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
        const ApplyOutcome o = shared.apply(grad, v, t, b, per[t].counters, {});
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

// Plain SGD with step size `lr` unless another optimizer is given.
std::unique_ptr<SharedParameters> make(std::string_view algorithm, int threads, std::vector<float>& initial,
                                       float lr = 1.0f, std::optional<OptimizerConfig> optimizer = {}) {
  ShmConfig c;
  test::set_algorithm(c, algorithm);
  c.threads = threads;
  c.optimizer = optimizer ? *optimizer : OptimizerConfig{.kind = OptimizerKind::Sgd, .lr = lr};
  return make_shared_parameters(c, initial);
}

std::vector<float> snapshot(const SharedParameters& shared) {
  std::vector<float> out(kSize);
  shared.snapshot(out);
  return out;
}

TEST(SharedParameters, ConsistentAlgorithmsApplyEveryUpdateExactlyOnce) {
  for (std::string_view algorithm : {"mutex", "rwlock", "leashed"}) {
    SCOPED_TRACE(std::string(algorithm));
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
  for (std::string_view algorithm : {"mutex", "rwlock", "leashed"}) {
    SCOPED_TRACE(std::string(algorithm));
    std::vector<float> initial(kSize, 0.0f);
    auto shared = make(algorithm, 3, initial);
    const Totals t = hammer(*shared, 3, 300, b);
    EXPECT_EQ(t.counters.applied, 900u);
    for (float p : snapshot(*shared)) ASSERT_EQ(p, 900.0f);
  }
}

TEST(SharedParameters, HogwildMayLoseUpdatesButNeverInventsThem) {
  std::vector<float> initial(kSize, 0.0f);
  auto shared = make("hogwild", 4, initial);
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
  auto shared = make("seq", 1, replica, 2.0f);
  Backoff b({}, 1);
  ThreadCounters counters;
  std::vector<float> grad(kSize, 0.5f);
  const uint64_t v = shared->read(replica, b, counters);
  const ApplyOutcome o = shared->apply(grad, v, 0, b, counters, {});
  EXPECT_TRUE(o.applied);
  EXPECT_EQ(o.staleness, 0u);
  EXPECT_EQ(replica[0], 0.0f);  // 1 - 2 * 0.5, in the replica itself
  EXPECT_EQ(shared->updates(), 1u);
}

TEST(SharedParameters, HogwildRefreshesTheReplicaInTheSamePass) {
  std::vector<float> initial(kSize, 3.0f), replica(kSize, -7.0f), grad(kSize, 1.0f);
  auto shared = make("hogwild", 1, initial, 0.5f);
  Backoff b({}, 1);
  ThreadCounters counters;
  const ApplyOutcome o = shared->apply(grad, 0, 0, b, counters, replica);
  EXPECT_TRUE(o.refreshed);
  EXPECT_EQ(o.version, 1u);
  EXPECT_EQ(replica, std::vector<float>(kSize, 2.5f));
  EXPECT_EQ(snapshot(*shared), replica);
  // The others leave the replica alone.
  for (std::string_view algorithm : {"mutex", "rwlock", "leashed"}) {
    auto other = make(algorithm, 1, initial, 0.5f);
    std::vector<float> untouched(kSize, -7.0f);
    EXPECT_FALSE(other->apply(grad, 0, 0, b, counters, untouched).refreshed);
    EXPECT_EQ(untouched, std::vector<float>(kSize, -7.0f));
  }
}

TEST(SharedParameters, LockStalenessCountsTheUpdatesInBetween) {
  for (std::string_view algorithm : {"mutex", "rwlock", "hogwild", "leashed"}) {
    SCOPED_TRACE(std::string(algorithm));
    std::vector<float> initial(kSize, 0.0f), local(kSize), grad(kSize, -1.0f);
    auto shared = make(algorithm, 2, initial);
    Backoff b({}, 1);
    ThreadCounters counters;
    const uint64_t old = shared->read(local, b, counters);
    for (int i = 0; i < 3; ++i) shared->apply(grad, shared->read(local, b, counters), 0, b, counters, {});
    EXPECT_EQ(shared->apply(grad, old, 0, b, counters, {}).staleness, 3u);
  }
}

const std::vector<OptimizerConfig> kOptimizers = {
    {.kind = OptimizerKind::Sgd, .lr = 0.1f, .weight_decay = 0.01f},
    {.kind = OptimizerKind::Momentum, .lr = 0.1f, .momentum = 0.9f},
    {.kind = OptimizerKind::Nesterov, .lr = 0.1f, .momentum = 0.8f, .weight_decay = 0.001f},
    {.kind = OptimizerKind::Adam, .lr = 0.01f},
};

// One thread, a run of different gradients: every algorithm ends with the
// bits the optimizer itself gives, so the optimizer state each keeps (under
// the lock, in each Leashed version, with each HOGWILD! thread in chunks)
// evolves as the optimizer's own. The size is no multiple of HOGWILD!'s chunk.
TEST(SharedParameters, EveryAlgorithmStepsLikeTheOptimizerItself) {
  const size_t size = 2 * HogwildParameters::kChunk + 77;
  Rng rng(7);
  std::vector<float> initial(size);
  for (float& x : initial) x = static_cast<float>(rng.uniform()) - 0.5f;
  std::vector<std::vector<float>> grads(6, std::vector<float>(size));
  for (auto& g : grads)
    for (float& x : g) x = static_cast<float>(rng.uniform()) - 0.5f;
  for (const OptimizerConfig& optimizer : kOptimizers) {
    std::vector<float> expected = initial;
    auto reference = make_optimizer(optimizer, size);
    for (const auto& g : grads) reference->step(expected, g);
    for (std::string_view algorithm : {"seq", "mutex", "rwlock", "hogwild",
                           "leashed"}) {
      SCOPED_TRACE(std::string(algorithm) + " with " + to_string(optimizer.kind));
      std::vector<float> start = initial, local(size);
      auto shared = make(algorithm, 1, start, 0, optimizer);
      Backoff b({}, 1);
      ThreadCounters counters;
      for (const auto& g : grads) shared->apply(g, shared->read(local, b, counters), 0, b, counters, local);
      std::vector<float> got(size);
      shared->snapshot(got);
      ASSERT_EQ(got, expected);
    }
  }
}

// Several threads, one constant gradient: the consistent algorithms apply every
// step to one shared optimizer state, so any order gives the bits of the
// optimizer's own run of as many steps.
TEST(SharedParameters, ConsistentAlgorithmsShareOneOptimizerState) {
  const int threads = 4, steps = 100;
  for (const OptimizerConfig& optimizer : kOptimizers) {
    std::vector<float> expected(kSize, 1.0f);
    const std::vector<float> grad(kSize, -0.25f);
    auto reference = make_optimizer(optimizer, kSize);
    for (int s = 0; s < threads * steps; ++s) reference->step(expected, grad);
    for (std::string_view algorithm : {"mutex", "rwlock", "leashed"}) {
      SCOPED_TRACE(std::string(algorithm) + " with " + to_string(optimizer.kind));
      std::vector<float> initial(kSize, 1.0f);
      auto shared = make(algorithm, threads, initial, 0, optimizer);
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          std::vector<float> local(kSize);
          Backoff b({}, 100 + t);
          ThreadCounters counters;
          for (int s = 0; s < steps; ++s) shared->apply(grad, shared->read(local, b, counters), t, b, counters, {});
        });
      for (auto& th : pool) th.join();
      EXPECT_EQ(snapshot(*shared), expected);
    }
  }
}

// Checkpoints: the state one algorithm saves (parameters, updates, the
// optimizer's state wherever it lives, each of two HOGWILD! threads' own),
// loaded into a fresh one made from other weights, goes on with the bits of
// the one never saved; and every later step depends on it (momentum, Adam).
TEST(SharedParameters, SavedStateGoesOnWithTheSameBits) {
  const size_t size = HogwildParameters::kChunk + 5;
  Rng rng(3);
  std::vector<std::vector<float>> grads(8, std::vector<float>(size));
  for (auto& g : grads)
    for (float& x : g) x = static_cast<float>(rng.uniform()) - 0.5f;
  for (const OptimizerConfig& optimizer : kOptimizers)
    for (const std::string& algorithm : test::shm_strategies()) {
      SCOPED_TRACE(std::string(algorithm) + " with " + to_string(optimizer.kind));
      const int threads = algorithm == "seq" ? 1 : 2;
      std::vector<float> storage(size, 0.5f), other_storage(size, -2.0f), local(size);
      auto shared = make(algorithm, threads, storage, 0, optimizer);
      Backoff b({}, 1);
      ThreadCounters counters;
      // Steps 0-3 from alternating threads, then the state, then 4-7 on both.
      auto steps = [&](SharedParameters& s, size_t from, size_t to) {
        for (size_t k = from; k < to; ++k)
          s.apply(grads[k], s.read(local, b, counters), static_cast<int>(k % threads), b, counters, {});
      };
      steps(*shared, 0, 4);
      StateWriter w;
      shared->save_state(w);
      auto loaded = make(algorithm, threads, other_storage, 0, optimizer);
      StateReader in(w.bytes(), "test state");
      loaded->load_state(in);
      in.expect_end();
      EXPECT_EQ(loaded->updates(), 4u);
      std::vector<float> a(size), c(size);
      loaded->snapshot(c);
      shared->snapshot(a);
      ASSERT_EQ(c, a);
      steps(*shared, 4, 8);
      steps(*loaded, 4, 8);
      shared->snapshot(a);
      loaded->snapshot(c);
      EXPECT_EQ(c, a);
      EXPECT_EQ(loaded->updates(), 8u);
      if (optimizer.kind == OptimizerKind::Sgd) continue;
      // The same parameters with the optimizer's state at zero go on to other
      // bits: the state saved is what carries the velocity and the moments.
      std::vector<float> params_only(size);
      shared->snapshot(params_only);
      auto restarted = make(algorithm, threads, params_only, 0, optimizer);
      steps(*restarted, 4, 8);
      steps(*shared, 4, 8);
      restarted->snapshot(c);
      shared->snapshot(a);
      EXPECT_NE(c, a);
    }
}

TEST(SharedParameters, LoadingRefusesStateOfAnotherShape) {
  std::vector<float> storage(kSize, 0.0f), small(kSize - 1, 0.0f);
  const OptimizerConfig adam{.kind = OptimizerKind::Adam, .lr = 0.01f};
  auto save = [](const SharedParameters& s) {
    StateWriter w;
    s.save_state(w);
    return w.take();
  };
  // Another model's size.
  const auto state = save(*make("leashed", 2, storage, 0, adam));
  auto smaller = make("leashed", 2, small, 0, adam);
  StateReader in(state, "ckpt");
  EXPECT_EQ(test::error_message([&] { smaller->load_state(in); }),
            "ckpt: record 'shm.params' holds 256 bytes, this run needs 252 (another model or settings?)");
  // Another number of HOGWILD! threads.
  const auto two = save(*make("hogwild", 2, storage, 0, adam));
  auto three = make("hogwild", 3, storage, 0, adam);
  StateReader in2(two, "ckpt");
  EXPECT_EQ(test::error_message([&] { three->load_state(in2); }),
            "ckpt: holds the optimizer state of 2 HOGWILD! threads, this run has 3");
  // Counts no run reaches, which would overflow Adam's step count (the
  // Leashed version's number) or a HOGWILD! thread's.
  auto three_state = save(*three);
  for (const auto& [state, name] :
       {std::pair{state, std::string("shm.updates")}, std::pair{three_state, std::string("hogwild.thread2.optimizer_steps")}}) {
    const auto edited = test::edited<uint64_t>(state, name, [](auto& v) { v[0] = uint64_t{1} << 63; });
    auto target = name == "shm.updates" ? make("leashed", 2, storage, 0, adam)
                                        : make("hogwild", 3, storage, 0, adam);
    StateReader crafted(edited, "ckpt");
    EXPECT_EQ(test::error_message([&] { target->load_state(crafted); }),
              "ckpt: record '" + name + "' counts 9223372036854775808 updates (a run counts from 0 to below "
              "9007199254740992)");
  }
  // Another optimizer's state under a lock.
  const auto sgd = save(*make("mutex", 2, storage, 0.1f));
  auto with_adam = make("mutex", 2, storage, 0, adam);
  StateReader in3(sgd, "ckpt");
  EXPECT_NE(test::error_message([&] { with_adam->load_state(in3); }).find("ckpt: "), std::string::npos);
}

}  // namespace
}  // namespace ptrain
