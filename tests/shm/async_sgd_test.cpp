// The shared-memory runner: every algorithm trains the native model to the
// target loss; divergence ends a run cleanly; errors name the thread.
#include "shm/async_sgd.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "counting_model.hpp"
#include "data/synthetic.hpp"
#include "softmax_replicas.hpp"
#include "shm_strategy_configs.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

ShmConfig config_for(std::string_view algorithm, int threads) {
  ShmConfig c;
  test::set_algorithm(c, algorithm);
  c.threads = threads;
  c.batch = 8;
  c.optimizer.lr = 0.1f;
  c.epochs = 20;
  c.check_every = 25;
  c.seed = 9;
  return c;
}

TEST(AsyncSgd, EveryAlgorithmTrainsTheNativeModelToTheTarget) {
  const Dataset data = make_gaussian_clusters(600, 10, 3, 4);
  for (const std::string& algorithm : test::shm_strategies()) {
    const std::string name = std::string(algorithm);
    SCOPED_TRACE(name);
    ShmConfig c = config_for(algorithm, algorithm == "seq" ? 1 : 3);
    c.target_loss = 0.15;
    const AsyncSgdResult r = run_async_sgd(c, data, data, test::softmax_replicas(data));
    EXPECT_EQ(r.stopped_by, "target");
    ASSERT_TRUE(r.seconds_to_target.has_value());
    EXPECT_LE(r.final_loss, 0.15);
    EXPECT_GT(r.checks.front().loss, 0.5);  // the initial model is far from it
    EXPECT_FALSE(r.diverged);
    EXPECT_EQ(r.totals.applied + r.totals.dropped, r.gradients);
    EXPECT_EQ(r.staleness.total(), r.totals.applied);
    EXPECT_EQ(r.checks.back().updates, r.totals.applied);
    if (algorithm == "seq") {
      EXPECT_EQ(r.staleness.max(), 0u);
    }
  }
}

TEST(AsyncSgd, SequentialRunIsDeterministic) {
  const Dataset data = make_gaussian_clusters(300, 6, 3, 2);
  ShmConfig c = config_for("seq", 1);
  c.epochs = 2;
  const AsyncSgdResult a = run_async_sgd(c, data, data, test::softmax_replicas(data));
  const AsyncSgdResult b = run_async_sgd(c, data, data, test::softmax_replicas(data));
  EXPECT_EQ(a.final_params, b.final_params);
  EXPECT_EQ(a.stopped_by, "epochs");
  EXPECT_EQ(a.gradients, static_cast<uint64_t>(std::ceil(2.0 * 300 / 8)));
  c.seed = 10;
  EXPECT_NE(run_async_sgd(c, data, data, test::softmax_replicas(data)).final_params, a.final_params);
}

TEST(AsyncSgd, DivergenceEndsTheRunAndIsReported) {
  const Dataset data = make_gaussian_clusters(300, 6, 3, 2, 5.0f);
  for (std::string_view algorithm : {"hogwild", "leashed", "mutex"}) {
    SCOPED_TRACE(std::string(algorithm));
    ShmConfig c = config_for(algorithm, 2);
    c.optimizer.lr = 1e6f;
    c.diverge_above = 50;
    const AsyncSgdResult r = run_async_sgd(c, data, data, test::softmax_replicas(data));
    EXPECT_TRUE(r.diverged);
    EXPECT_EQ(r.stopped_by, "diverged");
    EXPECT_FALSE(r.diverged_why.empty());
  }
}

TEST(AsyncSgd, CountsEveryUpdateOfTheCountingModel) {
  const Dataset data = make_gaussian_clusters(64, 2, 2, 1);
  for (std::string_view algorithm : {"mutex", "rwlock", "leashed"}) {
    SCOPED_TRACE(std::string(algorithm));
    ShmConfig c = config_for(algorithm, 4);
    c.optimizer.lr = 1;
    c.epochs = 100;  // 800 gradients of batch 8
    c.check_every = 150;
    const AsyncSgdResult r = run_async_sgd(c, data, data, [] { return std::make_unique<test::CountingModel>(32); });
    EXPECT_EQ(r.gradients, 800u);
    EXPECT_EQ(r.totals.applied, 800u);
    for (float p : r.final_params) ASSERT_EQ(p, 800.0f);
    // A check every 150 updates, and one for the initial model.
    ASSERT_EQ(r.checks.size(), 1u + 6u);
    EXPECT_EQ(r.checks[1].updates, 150u);
  }
}

TEST(AsyncSgd, TimeLimitStopsTheRun) {
  const Dataset data = make_gaussian_clusters(64, 2, 2, 1);
  ShmConfig c = config_for("hogwild", 2);
  c.epochs = 1e7;
  c.check_every = 50;
  c.time_limit_s = 0.2;
  const AsyncSgdResult r = run_async_sgd(c, data, data, [] { return std::make_unique<test::CountingModel>(8); });
  EXPECT_EQ(r.stopped_by, "time limit");
  EXPECT_GE(r.train_seconds, 0.2);
}

class ThrowingModel final : public Model {
 public:
  explicit ThrowingModel(int* made) : inner_(4) { id_ = (*made)++; }
  std::string name() const override { return "throwing"; }
  const FlatLayout& layout() const override { return inner_.layout(); }
  std::span<float> params() override { return inner_.params(); }
  std::span<float> grads() override { return inner_.grads(); }
  float forward_backward(const Batch& b) override {
    if (id_ == 1 && ++calls_ == 2) throw Error("out of memory in layer 2");
    return inner_.forward_backward(b);
  }
  Metrics evaluate(const Dataset& d) override { return inner_.evaluate(d); }

 private:
  test::CountingModel inner_;
  int id_ = 0;
  int calls_ = 0;
};

TEST(AsyncSgd, AThreadsErrorStopsTheRunAndNamesTheThread) {
  const Dataset data = make_gaussian_clusters(64, 2, 2, 1);
  ShmConfig c = config_for("leashed", 2);
  c.epochs = 1e6;  // the run lasts until thread 1 has had its turn, however the threads are scheduled
  int made = 0;
  const std::string message = test::error_message(
      [&] { run_async_sgd(c, data, data, [&] { return std::make_unique<ThrowingModel>(&made); }); });
  EXPECT_EQ(message, "shared-memory thread 1 failed: out of memory in layer 2");
}

TEST(AsyncSgd, RejectsImpossibleOptions) {
  const Dataset data = make_gaussian_clusters(64, 2, 2, 1);
  ShmConfig c = config_for("seq", 2);
  EXPECT_EQ(test::error_message([&] { run_async_sgd(c, data, data, test::softmax_replicas(data)); }),
            "run.workers must be 1: seq runs one thread (got 2)");
  // Persistence is Leashed-SGD's own option: its options carry it to its parameters.
  LeashedOptions leashed;
  leashed.persistence = -5;
  c = leashed.shm_config();
  c.threads = 2;
  EXPECT_EQ(test::error_message([&] { run_async_sgd(c, data, data, test::softmax_replicas(data)); }),
            "strategy.persistence must be -1 (no bound) or at least 0 (got -5)");
  c = ShmConfig{};
  EXPECT_EQ(test::error_message([&] { run_async_sgd(c, data, data, test::softmax_replicas(data)); }),
            "shared-memory SGD: no algorithm (a shared-memory strategy's options make the config: shm_config())");
  c = config_for("leashed", 0);
  EXPECT_EQ(test::error_message([&] { run_async_sgd(c, data, data, test::softmax_replicas(data)); }),
            "run.workers must be at least 1 (got 0)");
  c = config_for("leashed", 2);
  c.backoff = {BackoffKind::Exponential, 10, 5};
  EXPECT_EQ(test::error_message([&] { run_async_sgd(c, data, data, test::softmax_replicas(data)); }),
            "strategy.backoff_max must be at least strategy.backoff_min (10 us) (got 5)");
}

}  // namespace
}  // namespace ptrain
