// The parameter-server strategies end to end, with workers and shards as
// threads: what they compute, and the properties they promise.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "test_support.hpp"
#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "test_models.hpp"
#include "run/trainer.hpp"

namespace ptrain {
namespace {

TrainConfig ps_config(const std::string& strategy, int workers, int servers) {
  TrainConfig c;
  c.workers = workers;
  c.batch = 16;
  c.epochs = 1;
  c.seed = 77;
  c.make_strategy = test::named_strategy(strategy, servers);
  c.strategy.optimizer.kind = OptimizerKind::Adam;
  c.strategy.optimizer.lr = 0.01f;
  c.comm_timeout = std::chrono::seconds(30);
  return c;
}

TEST(PsSync, GivesTheParametersOfHybridAllreduceForOneTwoAndThreeShards) {
  const Dataset data = make_gaussian_clusters(2000, 13, 5, 3);
  TrainConfig hybrid = ps_config("hybrid", 4, 0);
  hybrid.max_steps = 20;
  const auto expected = train(hybrid, data, nullptr, test::softmax_factory(data)).final_params;
  for (int servers : {1, 2, 3}) {
    TrainConfig c = ps_config("ps-sync", 4, servers);
    c.max_steps = 20;
    const RunResult r = train(c, data, nullptr, test::softmax_factory(data));
    EXPECT_EQ(r.steps, 20u);
    ASSERT_EQ(r.final_params.size(), expected.size());
    EXPECT_LE(test::max_relative_difference(r.final_params, expected), 1e-5) << servers << " shard(s)";
    // ... and they did move: 20 Adam steps at lr 0.01 change the weights by far more.
    const auto initial_model = test::softmax_factory(data)(0);
    const auto initial = initial_model->params();
    EXPECT_GT(test::max_relative_difference(r.final_params, std::vector<float>(initial.begin(), initial.end())),
              0.05);
    ASSERT_EQ(r.servers.size(), static_cast<size_t>(servers));
    for (const auto& s : r.servers) {
      EXPECT_EQ(s.updates, 20u);
      EXPECT_EQ(s.applied(), 80u);  // 4 gradients an update, none stale
      EXPECT_EQ(s.max_staleness(), 0u);
    }
  }
}

TEST(PsSync, IsDeterministicBitForBit) {
  const Dataset data = make_gaussian_clusters(600, 7, 3, 9);
  TrainConfig c = ps_config("ps-sync", 3, 2);
  c.epochs = 2;
  const auto a = train(c, data, &data, test::softmax_factory(data));
  const auto b = train(c, data, &data, test::softmax_factory(data));
  EXPECT_EQ(a.final_params, b.final_params);
  EXPECT_EQ(a.step_losses, b.step_losses);
  EXPECT_EQ(a.epochs.size(), 2u);
}

// The compute time that --straggler multiplies: the tests' models take
// microseconds, so a straggler gets this much of its own to be slow in.
constexpr auto kStragglerCompute = std::chrono::milliseconds(2);

// Each gradient is a one at its own coordinate: worker r's k-th gradient is
// e(r * per_worker + k). With SGD at lr 1, the final parameters show which
// gradients were applied, and how many times. The `slow` worker computes for
// kStragglerCompute.
class OneHotModel : public Model {
 public:
  OneHotModel(int rank, size_t workers, size_t per_worker, int slow)
      : rank_(static_cast<size_t>(rank)),
        per_worker_(per_worker),
        slow_(rank == slow),
        params_(workers * per_worker),
        grads_(params_.size()) {
    layout_.add("w", {static_cast<int64_t>(params_.size())});
  }
  std::string name() const override { return "one-hot"; }
  const FlatLayout& layout() const override { return layout_; }
  std::span<float> params() override { return params_; }
  std::span<float> grads() override { return grads_; }
  float forward_backward(const Batch&) override {
    if (slow_) std::this_thread::sleep_for(kStragglerCompute);
    std::fill(grads_.begin(), grads_.end(), 0.0f);
    if (step_ >= per_worker_) throw Error("one-hot model: more steps than coordinates");
    grads_[rank_ * per_worker_ + step_++] = 1.0f;
    return 0.5f;
  }
  Metrics evaluate(const Dataset&) override { return {}; }

 private:
  size_t rank_, per_worker_, step_ = 0;
  bool slow_;
  FlatLayout layout_;
  std::vector<float> params_, grads_;
};

ModelFactory one_hot_factory(int workers, size_t per_worker, int slow = -1) {
  // By worker index: the server threads make layout-only replicas (kLayoutOnly) at the same time.
  return [=](int worker) {
    return std::make_unique<OneHotModel>(std::max(worker, 0), static_cast<size_t>(workers), per_worker, slow);
  };
}

TrainConfig one_hot_config(const std::string& strategy, int workers, int servers) {
  TrainConfig c = ps_config(strategy, workers, servers);
  c.strategy.optimizer.kind = OptimizerKind::Sgd;
  c.strategy.optimizer.lr = 1.0f;
  c.epochs = 2;
  return c;
}

uint64_t sum(const std::vector<size_t>& v) {
  uint64_t s = 0;
  for (size_t x : v) s += x;
  return s;
}

TEST(Async, AppliesEveryPushedGradientExactlyOnceAndItsHistogramSumsToTheUpdates) {
  const Dataset data = make_gaussian_clusters(640, 3, 2, 4);
  const int workers = 4;
  // A worker may take every ticket of the run: 2 epochs x 4 workers x 10 steps.
  const size_t per_worker = 80;
  for (int servers : {1, 3}) {
    TrainConfig c = one_hot_config("async", workers, servers);
    c.straggler_rank = 1;
    c.straggler_factor = 3;
    const RunResult r = train(c, data, nullptr, one_hot_factory(workers, per_worker, 1));
    ASSERT_EQ(r.worker_steps.size(), 4u);
    const uint64_t pushed = sum(r.worker_steps);
    EXPECT_EQ(pushed, 2u * 4u * 10u);  // every ticket of the run became a push
    size_t ones = 0;
    for (size_t i = 0; i < r.final_params.size(); ++i) {
      const float p = r.final_params[i];
      ASSERT_TRUE(p == 0.0f || p == -1.0f) << "coordinate " << i << " is " << p;
      ones += p == -1.0f;
    }
    EXPECT_EQ(ones, pushed);
    // Worker r's first steps, and only those, were applied.
    for (size_t w = 0; w < 4; ++w)
      for (size_t k = 0; k < per_worker; ++k)
        EXPECT_EQ(r.final_params[w * per_worker + k], k < r.worker_steps[w] ? -1.0f : 0.0f);
    for (const auto& s : r.servers) {
      EXPECT_EQ(s.applied(), pushed);
      EXPECT_EQ(s.updates, pushed);
      EXPECT_EQ(s.dropped_stale, 0u);
    }
  }
}

// Pushes go through the worker's codec, one per shard, and the shard decodes
// them: fp16 carries the one-hot gradients exactly, at half the bytes; top-k
// with k = 1 per shard sends only the one nonzero coordinate.
TEST(PsSync, PushesGoThroughTheCodecOfEachShard) {
  const Dataset data = make_gaussian_clusters(640, 3, 2, 4);
  TrainConfig plain = one_hot_config("ps-sync", 4, 2);
  const RunResult expected = train(plain, data, nullptr, one_hot_factory(4, 20));
  TrainConfig fp16 = plain;
  fp16.strategy.codec.choice = Fp16Options{};
  const RunResult half = train(fp16, data, nullptr, one_hot_factory(4, 20));
  EXPECT_EQ(half.final_params, expected.final_params);
  ASSERT_EQ(half.codec.size(), 4u);
  for (const auto& c : half.codec) {
    EXPECT_GT(c.dense_bytes, 0u);
    EXPECT_DOUBLE_EQ(c.ratio(), 2.0);
  }
  TrainConfig topk = plain;
  TopkOptions one;
  one.ratio = 1.0 / 40;  // one element of each shard's 40
  topk.strategy.codec.choice = one;
  const RunResult sparse = train(topk, data, nullptr, one_hot_factory(4, 20));
  EXPECT_EQ(sparse.final_params, expected.final_params);
  for (const auto& c : sparse.codec) EXPECT_EQ(c.selected, 20u * 2u);  // a pair per step and shard
}

// Compressed pulls on a model that learns: the test accuracy of dense pulls,
// and the bytes the shards sent cut by the codec's ratio.
TEST(PsPulls, CompressedPullsTrainAsDenseOnesDoWithFewerBytes) {
  const Dataset data = make_gaussian_clusters(1200, 13, 5, 3);
  const Dataset& test_set = data;  // the clusters of one seed
  TrainConfig dense = ps_config("ps-sync", 3, 2);
  dense.epochs = 2;
  const RunResult expected = train(dense, data, &test_set, test::softmax_factory(data));
  const auto dense_traffic = server_traffic(expected);
  EXPECT_DOUBLE_EQ(dense_traffic.pull_ratio(), 1.0);
  EXPECT_EQ(dense_traffic.pulled.dense_pulls, dense_traffic.pulled.pulls);
  TopkPullOptions topk;
  topk.ratio = 0.25;
  topk.refresh = 10;
  const std::vector<std::pair<PullCodecChoice, double>> codecs = {
      {Fp16PullOptions{}, 1.8}, {Int8PullOptions{}, 3.0}, {topk, 1.4}};
  for (const auto& [choice, min_ratio] : codecs) {
    const std::string name(PullCodecRegistry::name_of(choice));
    TrainConfig c = dense;
    c.strategy.pull = choice;
    const RunResult r = train(c, data, &test_set, test::softmax_factory(data));
    ASSERT_EQ(r.epochs.size(), 2u) << name;
    EXPECT_NEAR(r.epochs.back().test_accuracy, expected.epochs.back().test_accuracy, 0.02) << name;
    EXPECT_GT(r.epochs.back().test_accuracy, 0.5) << name;
    const auto traffic = server_traffic(r);
    EXPECT_EQ(traffic.pulled.pulls, dense_traffic.pulled.pulls) << name;
    EXPECT_EQ(traffic.pulled.dense_bytes, dense_traffic.pulled.dense_bytes) << name;
    EXPECT_GT(traffic.pull_ratio(), min_ratio) << name;
    EXPECT_EQ(traffic.pushed_bytes, dense_traffic.pushed_bytes) << name << ": pushes stay dense";
    // Every worker's first pull, and the exact ones before evaluation and at the end, are dense.
    EXPECT_GE(traffic.pulled.dense_pulls, 3u) << name;
    EXPECT_LT(traffic.pulled.dense_pulls, traffic.pulled.pulls / 2) << name;
    // ps-sync stays deterministic with them.
    EXPECT_EQ(train(c, data, &test_set, test::softmax_factory(data)).final_params, r.final_params) << name;
  }
}

TEST(PsPulls, AsyncWorkersEachKeepTheirOwnViewThroughInt8Pulls) {
  const Dataset data = make_gaussian_clusters(1200, 13, 5, 3);
  const Dataset& test_set = data;  // the clusters of one seed
  TrainConfig c = ps_config("async", 3, 1);
  c.epochs = 2;
  c.strategy.pull = Int8PullOptions{};
  const RunResult r = train(c, data, &test_set, test::softmax_factory(data));
  EXPECT_GT(r.epochs.back().test_accuracy, 0.5);
  EXPECT_GT(server_traffic(r).pull_ratio(), 3.0);
}

TEST(Async, DropPolicyDropsExactlyTheGradientsStalerThanT) {
  const Dataset data = make_gaussian_clusters(640, 3, 2, 4);
  TrainConfig c = one_hot_config("async", 4, 1);
  c.make_strategy = test::named_strategy("async", 1, [](StrategyChoice& s) { std::get<AsyncOptions>(s).stale_policy = "drop:1"; });
  c.straggler_rank = 2;
  c.straggler_factor = 4;
  const RunResult r = train(c, data, nullptr, one_hot_factory(4, 80, 2));
  const ServerStats& s = r.servers.at(0);
  size_t ones = 0;
  for (float p : r.final_params) {
    ASSERT_TRUE(p == 0.0f || p == -1.0f) << p;
    ones += p == -1.0f;
  }
  EXPECT_EQ(ones, s.applied());
  EXPECT_EQ(s.applied() + s.dropped_stale, sum(r.worker_steps));
  EXPECT_LE(s.max_staleness(), 1u);
}

TEST(Async, ScalePolicyScalesEachStepByOneOverOnePlusItsStaleness) {
  const Dataset data = make_gaussian_clusters(640, 3, 2, 4);
  TrainConfig c = one_hot_config("async", 4, 2);
  c.make_strategy = test::named_strategy("async", 2, [](StrategyChoice& s) { std::get<AsyncOptions>(s).stale_policy = "scale"; });
  c.straggler_rank = 0;
  c.straggler_factor = 4;
  const RunResult r = train(c, data, nullptr, one_hot_factory(4, 80, 0));
  // Every applied gradient moved its coordinate by exactly -1/(1+s); the s's
  // found that way are the histogram of shard 0's half of the coordinates
  // plus shard 1's: count them over all coordinates and compare the total.
  std::map<uint64_t, uint64_t> seen;
  for (float p : r.final_params) {
    if (p == 0.0f) continue;
    const double s = -1.0 / static_cast<double>(p) - 1.0;
    const auto rounded = static_cast<uint64_t>(std::llround(s));
    ASSERT_NEAR(s, static_cast<double>(rounded), 1e-3) << p;
    seen[rounded]++;
  }
  uint64_t total = 0;
  for (const auto& [s, n] : seen) total += n;
  EXPECT_EQ(total, sum(r.worker_steps));
  EXPECT_EQ(r.servers.at(0).applied(), sum(r.worker_steps));
}

// A model that records, for the ssp invariant, how many steps each worker
// has completed when any worker starts one.
struct StepMonitor {
  std::mutex mutex;
  std::vector<size_t> completed;
  struct Start {
    size_t worker, completed_by_it;
    std::vector<size_t> completed_by_all;
  };
  std::vector<Start> starts;
};

class MonitoredModel : public SoftmaxRegression {
 public:
  MonitoredModel(const Dataset& d, size_t rank, StepMonitor& monitor, size_t slow = SIZE_MAX)
      : SoftmaxRegression(d.sample_numel(), d.num_classes(), 5), rank_(rank), slow_(rank == slow), monitor_(monitor) {}
  float forward_backward(const Batch& b) override {
    {
      std::lock_guard lock(monitor_.mutex);
      monitor_.starts.push_back({rank_, monitor_.completed[rank_], monitor_.completed});
    }
    if (slow_) std::this_thread::sleep_for(kStragglerCompute);
    const float loss = SoftmaxRegression::forward_backward(b);
    std::lock_guard lock(monitor_.mutex);
    monitor_.completed[rank_]++;
    return loss;
  }

 private:
  size_t rank_;
  bool slow_;
  StepMonitor& monitor_;
};

TEST(Ssp, NoWorkerEverRunsMoreThanSStepsAheadOfTheSlowest) {
  const Dataset data = make_gaussian_clusters(1280, 5, 3, 8);
  for (uint64_t s : {0u, 2u}) {
    StepMonitor monitor;
    monitor.completed.assign(4, 0);
    ModelFactory factory = [&](int worker) {
      return std::make_unique<MonitoredModel>(data, static_cast<size_t>(std::max(worker, 0)), monitor, 3);
    };
    TrainConfig c = ps_config("ssp", 4, 2);
    c.make_strategy = test::named_strategy("ssp", 2, [s](StrategyChoice& o) { std::get<SspOptions>(o).staleness = s; });
    c.straggler_rank = 3;
    c.straggler_factor = 5;
    const RunResult r = train(c, data, nullptr, factory);
    // Checked on every step start, from the workers' side: a worker that has
    // taken its last step no longer holds the others back.
    for (const auto& start : monitor.starts) {
      size_t slowest = start.completed_by_it;
      for (size_t j = 0; j < 4; ++j)
        if (start.completed_by_all[j] < r.worker_steps[j]) slowest = std::min(slowest, start.completed_by_all[j]);
      ASSERT_LE(start.completed_by_it - slowest, s) << "worker " << start.worker;
    }
    // The coordinator's own record: the bound was reached (the straggler held the others back), never passed.
    EXPECT_EQ(r.servers.at(0).max_clock_gap, s);
    EXPECT_EQ(sum(r.worker_steps), 4u * 20u);
  }
}

TEST(PsBackup, DropsTheLateGradientsAndBuildsEveryUpdateFromWMinusB) {
  const Dataset data = make_gaussian_clusters(1280, 5, 3, 8);
  TrainConfig c = one_hot_config("ps-backup", 4, 2);
  c.straggler_rank = 2;
  c.straggler_factor = 20;
  const RunResult r = train(c, data, nullptr, one_hot_factory(4, 80, 2));
  const ServerStats& s = r.servers.at(0);
  EXPECT_EQ(s.updates, 2u * 20u);
  EXPECT_EQ(s.applied(), 3u * s.updates);
  EXPECT_EQ(s.applied() + s.dropped_late, sum(r.worker_steps));
  EXPECT_GE(s.dropped_late, 1u);
  EXPECT_LT(r.worker_steps[2], s.updates);  // 40 ms a step: it falls behind and is dropped
  // SGD at lr 1 on the mean of 3: each applied gradient shows as -1/3, a dropped one as 0.
  size_t applied = 0;
  for (float p : r.final_params) {
    ASSERT_TRUE(p == 0.0f || std::abs(p + 1.0f / 3.0f) < 1e-6f) << p;
    applied += p != 0.0f;
  }
  EXPECT_EQ(applied, s.applied());
}

TEST(WarmupSingle, OnlyWorkerZeroTrainsForTheFirstNGradients) {
  const Dataset data = make_gaussian_clusters(1280, 5, 3, 8);
  for (const char* strategy : {"async", "ssp"}) {
    StepMonitor monitor;
    monitor.completed.assign(3, 0);
    ModelFactory factory = [&](int worker) {
      return std::make_unique<MonitoredModel>(data, static_cast<size_t>(std::max(worker, 0)), monitor);
    };
    TrainConfig c = ps_config(strategy, 3, 1);
    c.make_strategy = test::named_strategy(strategy, 1, [](StrategyChoice& o) {
      std::visit([](auto& x) { if constexpr (requires { x.warmup_single; }) x.warmup_single = 12; }, o);
    });
    const RunResult r = train(c, data, nullptr, factory);
    for (const auto& start : monitor.starts) {
      if (start.worker != 0) {
        ASSERT_GE(start.completed_by_all[0], 12u) << strategy;
      }
    }
    EXPECT_GE(r.worker_steps[0], 12u);
  }
}

// A model that fails on one worker at one step.
class FailingModel : public SoftmaxRegression {
 public:
  FailingModel(const Dataset& d, int fail_at) : SoftmaxRegression(d.sample_numel(), d.num_classes(), 5), fail_at_(fail_at) {}
  float forward_backward(const Batch& b) override {
    if (calls_++ == fail_at_) throw Error("disk on fire");
    return SoftmaxRegression::forward_backward(b);
  }

 private:
  int fail_at_;
  int calls_ = 0;
};

TEST(Async, AFailedWorkerIsReportedAndTheOthersGoOn) {
  const Dataset data = make_gaussian_clusters(960, 5, 3, 8);
  // Worker 2 fails at its first step: the workers share each epoch's tickets,
  // so on a loaded machine the others may take all but a few of them, and a
  // later failing step might never come.
  ModelFactory factory = [&](int worker) { return std::make_unique<FailingModel>(data, worker == 2 ? 0 : -1); };
  TrainConfig c = ps_config("async", 4, 2);
  c.epochs = 2;
  const RunResult r = train(c, data, &data, factory);
  ASSERT_EQ(r.left.size(), 1u);
  EXPECT_EQ(r.left[0], "worker 2 failed at its step 1 and left: disk on fire");
  EXPECT_EQ(r.worker_steps[2], 0u);
  EXPECT_EQ(r.epochs.size(), 2u);
  // Its unpushed ticket is void; every other ticket was pushed and applied.
  EXPECT_EQ(sum(r.worker_steps), 2u * 4u * 15u - 1u);
  EXPECT_EQ(r.servers.at(0).applied(), sum(r.worker_steps));
  EXPECT_EQ(r.servers.at(0).left_workers, std::vector<uint32_t>{2});
}

TEST(PsSynchronousModes, AFailedWorkerEndsTheRunNamingIt) {
  const Dataset data = make_gaussian_clusters(960, 5, 3, 8);
  for (const char* strategy : {"ps-sync", "ps-backup", "ssp"}) {
    // At its first step: under ps-backup a slow worker may not reach a later one.
    ModelFactory factory = [&](int worker) { return std::make_unique<FailingModel>(data, worker == 2 ? 0 : -1); };
    TrainConfig c = ps_config(strategy, 4, 2);
    try {
      train(c, data, nullptr, factory);
      FAIL() << "expected an error with " << strategy;
    } catch (const InterruptedError& e) {
      EXPECT_STREQ(e.what(), "worker 2 failed at its step 1: disk on fire") << strategy;
    }
  }
}

// A model whose forward pass stalls once, on one worker.
class StallingModel : public SoftmaxRegression {
 public:
  StallingModel(const Dataset& d, int stall_at) : SoftmaxRegression(d.sample_numel(), d.num_classes(), 5), stall_at_(stall_at) {}
  float forward_backward(const Batch& b) override {
    if (calls_++ == stall_at_) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return SoftmaxRegression::forward_backward(b);
  }

 private:
  int stall_at_;
  int calls_ = 0;
};

TEST(PsSync, AWorkerThatNeverPushesIsNamedByTheServer) {
  const Dataset data = make_gaussian_clusters(960, 5, 3, 8);
  ModelFactory factory = [&](int worker) { return std::make_unique<StallingModel>(data, worker == 1 ? 2 : -1); };
  TrainConfig c = ps_config("ps-sync", 3, 2);
  c.comm_timeout = std::chrono::milliseconds(200);
  try {
    train(c, data, nullptr, factory);
    FAIL() << "expected a timeout";
  } catch (const Error& e) {
    // The shard waits for update 3's gradients from the first push on; the
    // other workers wait for worker 1 in their lockstep check right after
    // pushing, with the same timeout. The shard's clock starts first, but on a
    // loaded machine either may be first to wake: each names worker 1.
    const std::string what = e.what();
    const bool by_server =
        what.find("ps-sync: server shard") != std::string::npos &&
        what.find("timed out after 0.2 s waiting for gradients for update 3 (2 of 3 in; none yet from worker(s) 1)") !=
            std::string::npos;
    const bool by_workers = what.find("timed out after 0.2 s waiting for worker(s) 1") != std::string::npos;
    EXPECT_TRUE(by_server || by_workers) << what;
  }
}

// A model slow enough that a short time limit ends the run within its first epochs.
class SlowModel : public SoftmaxRegression {
 public:
  explicit SlowModel(const Dataset& d) : SoftmaxRegression(d.sample_numel(), d.num_classes(), 5) {}
  float forward_backward(const Batch& b) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return SoftmaxRegression::forward_backward(b);
  }
};

TEST(ParameterServer, ATimeLimitEndsTheRunAtAStepEveryWorkerAgreesOn) {
  const Dataset data = make_gaussian_clusters(960, 5, 3, 8);
  ModelFactory factory = [&](int) { return std::make_unique<SlowModel>(data); };
  for (const char* strategy : {"ps-sync", "ps-backup", "ssp", "async"}) {
    TrainConfig c = ps_config(strategy, 3, 2);
    c.epochs = 1000;  // 20 steps each: far more than 0.3 s
    c.time_limit_s = 0.3;
    const RunResult r = train(c, data, &data, factory);
    EXPECT_LT(r.epochs.size(), 1000u) << strategy;
    // Not before the limit (less the skew of the workers leaving the epoch's first barrier).
    EXPECT_GE(r.train_seconds, 0.25) << strategy;
    const ServerStats& s = r.servers.at(0);
    const uint64_t pushed = sum(r.worker_steps);
    if (std::string(strategy) == "ps-sync") {
      EXPECT_EQ(r.worker_steps, std::vector<size_t>(3, r.worker_steps[0]));
      EXPECT_EQ(s.updates, r.worker_steps[0]);
    } else if (std::string(strategy) == "ps-backup") {
      EXPECT_EQ(s.applied(), 2 * s.updates);
      EXPECT_EQ(s.applied() + s.dropped_late, pushed);
    } else {
      EXPECT_EQ(s.applied(), pushed) << strategy;
    }
  }
}

TEST(ParameterServer, ImpossibleSettingsAreRejectedNamingTheOption) {
  const Dataset data = make_gaussian_clusters(200, 3, 2, 4);
  auto expect_error = [&](TrainConfig c, const std::string& message) {
    try {
      train(c, data, nullptr, test::softmax_factory(data));
      ADD_FAILURE() << "expected: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  };
  TrainConfig c = ps_config("ps-backup", 4, 1);
  c.make_strategy = test::named_strategy("ps-backup", 1, [](StrategyChoice& s) { std::get<PsBackupOptions>(s).backup = 4; });
  expect_error(c, "ps-backup: backup 4 needs 0 <= b < W = 4");
  c = ps_config("ps-sync", 2, 0);
  expect_error(c, "ps-sync: needs at least one server shard (got 0)");
  c = ps_config("async", 2, 13);
  expect_error(c, "strategy.servers 13: the model has only 8 parameter(s), fewer than the servers");
}

}  // namespace
}  // namespace ptrain
