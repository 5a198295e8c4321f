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

// SGD's kernels, except that the first step waits inside the update (after
// its thread took the latest version, before its swap) until `release` is
// set: another thread then publishes first, and the swap must fail.
class FirstStepWaits final : public Optimizer {
 public:
  explicit FirstStepWaits(const OptimizerConfig& config) : inner_(make_optimizer(config, 0)) {}
  mutable std::atomic<bool> inside{false};  // the first step waits
  std::atomic<bool> release{false};

  void step_with(std::span<float> params, std::span<const float> grad, const OptimizerState& state) const override {
    if (calls_.fetch_add(1) == 0) {
      inside.store(true);
      while (!release.load()) std::this_thread::yield();
    }
    inner_->step_with(params, grad, state);
  }
  size_t state_slots() const override { return inner_->state_slots(); }
  // Leashed-SGD uses only the kernels above.
  void step(std::span<float>, std::span<const float>) override { ADD_FAILURE(); }
  void step_slice(size_t, std::span<float>, std::span<const float>) override { ADD_FAILURE(); }
  void end_step() override { ADD_FAILURE(); }
  size_t size() const override { return 0; }
  void set_lr(float) override { ADD_FAILURE(); }
  void save_state(StateWriter&) const override { ADD_FAILURE(); }
  void load_state(StateReader&) override { ADD_FAILURE(); }

 private:
  std::unique_ptr<Optimizer> inner_;
  mutable std::atomic<int> calls_{0};
};

struct Collision {
  ThreadCounters first;  // the thread whose swap was overtaken
  uint64_t updates = 0;
  std::vector<float> params;
};

// Thread A takes the latest version and stops inside its update; thread B
// then publishes a whole update; A's swap fails and, persistence allowing,
// retries.
Collision collide(int persistence) {
  constexpr size_t size = 64;
  auto rule = std::make_unique<FirstStepWaits>(kSgd);
  FirstStepWaits& gate = *rule;
  LeashedParameters shared(std::vector<float>(size, 0.0f), 2, persistence, std::move(rule));
  const std::vector<float> grad(size, -1.0f);
  Collision out;
  std::thread a([&] {
    std::vector<float> local(size);
    Backoff b({}, 0);
    shared.apply(grad, shared.read(local, b, out.first), 0, b, out.first, {});
  });
  while (!gate.inside.load()) std::this_thread::yield();
  ThreadCounters second;
  std::vector<float> local(size);
  Backoff b({}, 1);
  const ApplyOutcome published = shared.apply(grad, shared.read(local, b, second), 1, b, second, {});
  gate.release.store(true);
  a.join();
  EXPECT_TRUE(published.applied);
  EXPECT_EQ(second.applied, 1u);
  EXPECT_EQ(second.failed_swaps, 0u);
  out.updates = shared.updates();
  out.params.resize(size);
  shared.snapshot(out.params);
  EXPECT_EQ(shared.pool().free_count(), shared.pool().capacity() - 1);
  return out;
}

TEST(LeashedParameters, AnOvertakenSwapIsDroppedAtPersistenceZero) {
  const Collision c = collide(0);
  EXPECT_EQ(c.first.failed_swaps, 1u);
  EXPECT_EQ(c.first.dropped, 1u);
  EXPECT_EQ(c.first.applied, 0u);
  EXPECT_EQ(c.updates, 1u);
  for (float p : c.params) ASSERT_EQ(p, 1.0f);  // B's update only
}

TEST(LeashedParameters, AnOvertakenSwapRetriesOnTheNewLatestWithinThePersistence) {
  const Collision c = collide(1);
  EXPECT_EQ(c.first.failed_swaps, 1u);
  EXPECT_EQ(c.first.dropped, 0u);
  EXPECT_EQ(c.first.applied, 1u);
  EXPECT_EQ(c.updates, 2u);
  for (float p : c.params) ASSERT_EQ(p, 2.0f);  // both, A's on top of B's
}

TEST(LeashedParameters, CountsStayExactUnderContentionWithPersistenceZero) {
  const int threads = 4, steps = 300;
  const size_t size = 1 << 14;
  LeashedParameters shared(std::vector<float>(size, 0.0f), threads, 0, kSgd);  // one attempt per gradient
  const ThreadCounters c = contend(shared, size, threads, steps);
  // Every failed swap drops its gradient; each gradient is applied or dropped
  // (how many collide depends on the scheduler: the tests above force one).
  EXPECT_EQ(c.dropped, c.failed_swaps);
  EXPECT_EQ(c.applied + c.dropped, uint64_t{threads * steps});
  EXPECT_EQ(shared.updates(), c.applied);
  std::vector<float> final_params(size);
  shared.snapshot(final_params);
  for (float p : final_params) ASSERT_EQ(p, static_cast<float>(c.applied));
  EXPECT_EQ(shared.pool().free_count(), shared.pool().capacity() - 1);
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
