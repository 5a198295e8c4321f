#include "run/trainer.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "test_models.hpp"
#include "test_support.hpp"
#include "run/report.hpp"
#include "run/result_file.hpp"

namespace ptrain {
namespace {

TrainConfig small_config(int workers) {
  TrainConfig c;
  c.workers = workers;
  c.batch = 16;
  c.epochs = 2;
  c.seed = 1234;
  c.strategy.optimizer.kind = OptimizerKind::Adam;
  c.strategy.optimizer.lr = 0.01f;
  c.make_strategy = test::named_strategy("hybrid");
  return c;
}

TEST(Trainer, SameSeedGivesTheSameLossesBitForBit) {
  const Dataset data = make_gaussian_clusters(800, 12, 4, 6);
  auto a = train(small_config(4), data, &data, test::softmax_factory(data));
  auto b = train(small_config(4), data, &data, test::softmax_factory(data));
  ASSERT_EQ(a.step_losses.size(), b.step_losses.size());
  EXPECT_EQ(0, std::memcmp(a.step_losses.data(), b.step_losses.data(), a.step_losses.size() * sizeof(float)));
  EXPECT_EQ(a.final_params, b.final_params);
  auto other = small_config(4);
  other.seed = 99;
  auto c = train(other, data, &data, test::softmax_factory(data));
  EXPECT_NE(a.step_losses, c.step_losses);
}

TEST(Trainer, LearnsAndReportsEpochs) {
  const Dataset data = make_gaussian_clusters(800, 12, 4, 6);
  const Dataset test_set = make_gaussian_clusters(200, 12, 4, 6).head(200);
  auto r = train(small_config(2), data, &test_set, test::softmax_factory(data));
  ASSERT_EQ(r.epochs.size(), 2u);
  EXPECT_EQ(r.epochs[0].steps, 800u / 2 / 16);
  EXPECT_LT(r.epochs[1].train_loss, r.step_losses.front());
  EXPECT_GT(r.epochs[1].test_accuracy, 0.9);
  EXPECT_EQ(r.samples, r.steps * 16 * 2);
  ASSERT_EQ(r.comm.size(), 2u);
  EXPECT_GT(r.comm[0].bytes_sent, 0u);
}

TEST(Trainer, RejectsImpossibleSettingsBeforeWork) {
  const Dataset data = make_gaussian_clusters(100, 4, 2, 1);
  auto c = small_config(0);
  EXPECT_THROW(train(c, data, nullptr, test::softmax_factory(data)), Error);
  c = small_config(4);
  c.batch = 26;  // shards of 25
  try {
    train(c, data, nullptr, test::softmax_factory(data));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run.batch 26 is larger than each worker's shard of 25"),
              std::string::npos)
        << e.what();
  }
}

// A model that fails on one worker at a given step.
class FailingModel : public SoftmaxRegression {
 public:
  FailingModel(size_t f, int c, int fail_after, bool nan)
      : SoftmaxRegression(f, c, 5), fail_after_(fail_after), nan_(nan) {}
  float forward_backward(const Batch& b) override {
    if (fail_after_ >= 0 && calls_++ == fail_after_) {
      if (nan_) return std::nanf("");
      throw Error("disk on fire");
    }
    return SoftmaxRegression::forward_backward(b);
  }

 private:
  int fail_after_;
  int calls_ = 0;
  bool nan_;
};

TEST(Trainer, AFailingWorkerStopsTheRunWithItsErrorInsteadOfHanging) {
  const Dataset data = make_gaussian_clusters(400, 4, 2, 1);
  for (const char* strategy : {"hybrid", "sequential"}) {
    for (bool nan : {false, true}) {
      int made = 0;
      ModelFactory factory = [&](int) -> std::unique_ptr<Model> {
        return std::make_unique<FailingModel>(4, 2, made++ == 2 ? 3 : -1, nan);
      };
      auto c = small_config(3);
      c.make_strategy = test::named_strategy(strategy);
      c.comm_timeout = std::chrono::seconds(30);
      if (nan) {  // divergence: every worker stops at that step, and the run returns what it has
        const RunResult r = train(c, data, nullptr, factory);
        EXPECT_TRUE(r.diverged) << strategy;
        EXPECT_NE(r.diverged_why.find("worker 2: the loss became nan at step 4"), std::string::npos) << r.diverged_why;
        EXPECT_EQ(r.worker_steps, (std::vector<size_t>{3, 3, 3})) << strategy;
        continue;
      }
      try {
        train(c, data, nullptr, factory);
        FAIL() << "expected an error";
      } catch (const InterruptedError& e) {  // a failed worker: a restart may get past it
        EXPECT_STREQ(e.what(), "worker 2 failed at its step 4: disk on fire");
      }
    }
  }
}

// A model whose forward pass stalls once, on one worker.
class StallingModel : public SoftmaxRegression {
 public:
  StallingModel(size_t f, int c, int stall_at) : SoftmaxRegression(f, c, 5), stall_at_(stall_at) {}
  float forward_backward(const Batch& b) override {
    if (calls_++ == stall_at_) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return SoftmaxRegression::forward_backward(b);
  }

 private:
  int stall_at_;
  int calls_ = 0;
};

TEST(Trainer, AWorkerThatNeverArrivesIsNamedInATimeout) {
  const Dataset data = make_gaussian_clusters(400, 4, 2, 1);
  for (const char* strategy : {"hybrid", "sequential"}) {
    int made = 0;
    ModelFactory factory = [&](int) -> std::unique_ptr<Model> {
      return std::make_unique<StallingModel>(4, 2, made++ == 1 ? 2 : -1);
    };
    auto c = small_config(3);
    c.make_strategy = test::named_strategy(strategy);
    c.comm_timeout = std::chrono::milliseconds(100);
    try {
      train(c, data, nullptr, factory);
      FAIL() << "expected a timeout with " << strategy;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("timed out"), std::string::npos) << what;
      if (std::string(strategy) == "hybrid")
        EXPECT_NE(what.find("allreduce: timed out after 0.1 s waiting for worker(s) 1"), std::string::npos)
            << what;
      else
        EXPECT_NE(what.find("worker 1 never finished"), std::string::npos) << what;
    }
  }
}

TEST(RunReport, HoldsConfigEpochsLossCurveAndBytes) {
  const Dataset data = make_gaussian_clusters(400, 4, 2, 1);
  auto c = small_config(2);
  c.log_every = 3;
  auto r = train(c, data, &data, test::softmax_factory(data));
  RunPlan plan;
  plan.model = SoftmaxOptions{};
  plan.run.workers = 2;
  World world;
  world.workers = 2;
  auto report = make_report(plan, world, r, {{"ptrain", "train"}, utc_now()});
  EXPECT_EQ(report["schema_version"], kReportSchemaVersion);
  EXPECT_EQ(report["plan"]["model"]["name"], "softmax");
  EXPECT_EQ(report["run"]["workers"], 2);
  EXPECT_EQ(report["command_line"][1], "train");
  EXPECT_FALSE(report["ptrain"]["commit"].get<std::string>().empty());
  EXPECT_GE(report["loss_curve"][0]["seconds"].get<double>(), 0.0);
  EXPECT_EQ(report["epochs"].size(), 2u);
  EXPECT_EQ(report["loss_curve"][0]["step"], 3);
  EXPECT_EQ(report["comm"].size(), 2u);
  EXPECT_GT(report["summary"]["samples_per_s"].get<double>(), 0);

  test::ScratchDir dir;
  const std::string path = dir.file("run.json");
  write_json_file(path, report);
  std::ifstream in(path);
  EXPECT_EQ(nlohmann::json::parse(in), report);
  EXPECT_THROW(check_writable(dir.file("no/such/dir/run.json")), Error);
}

}  // namespace
}  // namespace ptrain
