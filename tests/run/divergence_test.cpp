// divergence is detected in every strategy and codec (fp16 overflow
// included); every worker stops where they can agree and run() returns the
// result (the CLI writes the report and exits 3), never a hang or an exit 0.
// on_diverge rollback goes back to the last checkpoint with a smaller step;
// max_restarts goes on from it after a failed worker.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>

#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "model/model_registry.hpp"
#include "run/resume.hpp"
#include "run/run_fixtures.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {


RunPlan plan_with(std::string_view strategy) {
  RunPlan plan = test::softmax_plan(3, 8, 2);
  plan.strategy = *StrategyRegistry::make(strategy);
  plan.optimizer = SgdOptions{.lr = 0.05f};
  return plan;
}

// A step so large that the second step's logits overflow: the loss becomes inf or nan.
void explode(RunPlan& plan) { std::visit([](auto& o) { o.lr = 1e38f; }, plan.optimizer); }

TEST(Divergence, EveryTrainerStrategyStopsWithTheResultAndNamesTheWorker) {
  for (auto strategy : StrategyRegistry::names()) {
    RunPlan plan = plan_with(strategy);
    if (std::holds_alternative<SeqOptions>(plan.strategy)) plan.run.workers = 1;
    explode(plan);
    World world = make_world(plan);
    const RunResult r = run(plan, world, {}, test::inputs_for(plan, test::small_clusters()));
    EXPECT_TRUE(r.diverged) << strategy;
    // "worker 1: the loss became inf at step 2 ...", or the shared-memory run's own words.
    EXPECT_FALSE(r.diverged_why.empty()) << strategy;
    if (!shared_memory_config(plan.strategy)) {
      EXPECT_NE(r.diverged_why.find("worker "), std::string::npos) << strategy << ": " << r.diverged_why;
      EXPECT_LT(r.steps, 30u) << strategy;  // stopped long before the run's 60 steps
    }
  }
}

TEST(Divergence, LockstepWorkersStopAtTheSameStep) {
  for (std::string_view strategy : {"hybrid", "sequential", "ps-sync"}) {
    RunPlan plan = plan_with(strategy);
    explode(plan);
    World world = make_world(plan);
    const RunResult r = run(plan, world, {}, test::data_only(test::small_clusters()));
    ASSERT_TRUE(r.diverged) << strategy;
    ASSERT_EQ(r.worker_steps.size(), 3u) << strategy;
    EXPECT_EQ(r.worker_steps[0], r.worker_steps[1]) << strategy;
    EXPECT_EQ(r.worker_steps[0], r.worker_steps[2]) << strategy;
  }
}

TEST(Divergence, AGradientBeyondFp16sRangeIsDivergence) {
  LoadedData d = test::small_clusters();
  for (auto* set : {&d.train, &d.test})
    for (float& x : set->mutable_features()) x *= 1e6f;  // gradients of 1e6: far beyond 65504
  RunPlan plan = plan_with("hybrid");
  plan.codec = Fp16Options{};
  plan.optimizer = SgdOptions{.lr = 1e-9f};  // the loss itself stays finite
  World world = make_world(plan);
  const RunResult r = run(plan, world, {}, test::data_only(d));
  ASSERT_TRUE(r.diverged);
  EXPECT_NE(r.diverged_why.find("beyond fp16's range"), std::string::npos) << r.diverged_why;
  EXPECT_NE(r.diverged_why.find("at step 1 "), std::string::npos) << r.diverged_why;
}

// A replica whose every loss is nan (its gradient is the inner model's).
class NanLoss : public Model {
 public:
  explicit NanLoss(std::unique_ptr<Model> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  const FlatLayout& layout() const override { return inner_->layout(); }
  std::span<float> params() override { return inner_->params(); }
  std::span<float> grads() override { return inner_->grads(); }
  float forward_backward(const Batch& batch) override {
    inner_->forward_backward(batch);
    return std::numeric_limits<float>::quiet_NaN();
  }
  Metrics evaluate(const Dataset& data) override { return inner_->evaluate(data); }

 private:
  std::unique_ptr<Model> inner_;
};

TEST(Divergence, AsyncGoesOnWithoutADivergedWorkerAndStopsWhenAllHave) {
  // Only worker 2's loss is nan: the others train on.
  RunPlan plan = plan_with("async");
  World world = make_world(plan);
  RunInputs inputs = test::data_only(test::small_clusters());
  int made = 0;  // the factory is called on one thread: a probe, then workers 0, 1, 2
  inputs.model = [&](const ModelInput& in) -> std::unique_ptr<Model> {
    auto model = make_model(plan.model, in);
    if (made++ == 3) return std::make_unique<NanLoss>(std::move(model));
    return model;
  };
  const RunResult r = run(plan, world, {}, inputs);
  EXPECT_FALSE(r.diverged) << r.diverged_why;
  ASSERT_EQ(r.left.size(), 1u);
  EXPECT_NE(r.left[0].find("worker 2: the loss became"), std::string::npos) << r.left[0];
  EXPECT_GT(r.epochs.back().test_accuracy, 0.8);

  explode(plan);  // every worker's loss explodes: the run ends as diverged, not with loss 0
  const RunResult all = run(plan, world, {}, test::data_only(test::small_clusters()));
  EXPECT_TRUE(all.diverged);
  EXPECT_NE(all.diverged_why.find("every worker left"), std::string::npos) << all.diverged_why;
}

TEST(Divergence, RollbackGoesBackToTheLastCheckpointWithASmallerStep) {
  // A step that trains for a while and then diverges; halved twice it does not.
  RunPlan plan = plan_with("hybrid");
  plan.run.epochs = 3;
  test::ScratchDir dir;
  plan.run.checkpoint_dir = dir.file("ckpt");
  plan.run.checkpoint_every = Cadence{10, 0};
  plan.run.on_diverge = OnDiverge::Rollback;
  plan.run.rollback_lr_scale = 1e-39;
  plan.run.max_rollbacks = 2;
  explode(plan);
  // With lr 1e38 the first step already diverges: there is no checkpoint yet,
  // so the rollback goes back to the start, with lr 0.1.
  World world = make_world(plan);
  const RunResult r = run(plan, world, {}, test::data_only(test::small_clusters()));
  EXPECT_FALSE(r.diverged) << r.diverged_why;
  ASSERT_EQ(r.recoveries.size(), 1u);
  EXPECT_EQ(r.recoveries[0].kind, "rollback");
  EXPECT_EQ(r.recoveries[0].from, "");
  EXPECT_NEAR(r.recoveries[0].lr, 0.1, 1e-6);
  EXPECT_EQ(r.epochs.size(), 3u);
  EXPECT_GT(r.epochs.back().test_accuracy, 0.8);

  // Diverging after a checkpoint: the run goes back to it. A resumed run
  // (the checkpoint at step 30) whose learning rate then explodes rolls back
  // to that checkpoint, not to the start.
  RunPlan calm = plan_with("hybrid");
  calm.run.epochs = 3;
  calm.run.checkpoint_dir = plan.run.checkpoint_dir;
  calm.run.checkpoint_every = Cadence{10, 0};
  calm.run.max_steps = 30;
  test::ScratchDir fresh;
  calm.run.checkpoint_dir = fresh.file("ckpt");
  run(calm, world, {}, test::data_only(test::small_clusters()));
  RunPlan resumed = plan;
  resumed.run.checkpoint_dir = calm.run.checkpoint_dir;
  RunInputs inputs = test::data_only(test::small_clusters());
  inputs.resume = calm.run.checkpoint_dir;
  const RunResult back = run(resumed, world, {}, inputs);
  EXPECT_FALSE(back.diverged) << back.diverged_why;
  ASSERT_EQ(back.recoveries.size(), 1u);
  EXPECT_NE(back.recoveries[0].from.find("step-000000000030"), std::string::npos) << back.recoveries[0].from;
  EXPECT_EQ(back.epochs.size(), 3u);

  // Rollbacks that do not help end as diverged after max_rollbacks.
  plan.run.rollback_lr_scale = 0.5;
  test::ScratchDir again;
  plan.run.checkpoint_dir = again.file("ckpt");
  const RunResult stuck = run(plan, world, {}, test::data_only(test::small_clusters()));
  EXPECT_TRUE(stuck.diverged);
  EXPECT_EQ(stuck.recoveries.size(), 2u);
}

TEST(Divergence, ThePlanSaysWhatRollbackAndRestartsNeed) {
  RunPlan plan = plan_with("hybrid");
  plan.run.on_diverge = OnDiverge::Rollback;
  plan.run.max_restarts = 2;
  plan.run.backend = Backend::Mpi;
  const std::string problems = check_plan(plan).joined();
  EXPECT_NE(problems.find("run.on_diverge rollback needs checkpoints to roll back to (run.checkpoint_dir)"),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find("run.max_restarts: restarts go on from the last checkpoint, so it needs run.checkpoint_dir"),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find("under mpirun restart the job with --resume"), std::string::npos) << problems;
  plan = plan_with("hybrid");
  plan.run.rollback_lr_scale = 0.1;
  EXPECT_NE(check_plan(plan).joined().find("run.rollback_lr_scale applies only with run.on_diverge rollback"),
            std::string::npos);
}

TEST(Restarts, AFailedWorkerRestartsFromTheLastCheckpointToTheSameBits) {
  RunPlan plan = plan_with("hybrid");
  plan.codec = DgcOptions{.density = 0.2};
  World world = make_world(plan);
  const RunResult whole = run(plan, world, {}, test::data_only(test::small_clusters()));

  test::ScratchDir dir;
  plan.run.checkpoint_dir = dir.file("ckpt");
  plan.run.checkpoint_every = Cadence{10, 0};
  std::atomic<bool> armed{true};
  RunInputs inputs = test::data_only(test::small_clusters());
  inputs.model = [&](const ModelInput& in) -> std::unique_ptr<Model> {
    return std::make_unique<test::FailingModel>(make_model(plan.model, in), 35, &armed);
  };
  // Without restarts the failure ends the run, as one a retry may get past.
  {
    std::atomic<bool> once{true};
    RunInputs failing = inputs;
    failing.model = [&](const ModelInput& in) -> std::unique_ptr<Model> {
      return std::make_unique<test::FailingModel>(make_model(plan.model, in), 35, &once);
    };
    try {
      run(plan, world, {}, failing);
      ADD_FAILURE() << "did not throw";
    } catch (const InterruptedError& e) {
      EXPECT_NE(std::string(e.what()).find("killed for the test"), std::string::npos) << e.what();
    }
  }
  test::ScratchDir other;
  plan.run.checkpoint_dir = other.file("ckpt");
  plan.run.max_restarts = 1;
  std::vector<std::string> warnings;
  RunCallbacks callbacks;
  callbacks.on_warning = [&](const std::string& w) { warnings.push_back(w); };
  const RunResult r = run(plan, world, callbacks, inputs);
  ASSERT_EQ(r.recoveries.size(), 1u);
  EXPECT_EQ(r.recoveries[0].kind, "restart");
  EXPECT_NE(r.recoveries[0].from.find("step-000000000030"), std::string::npos) << r.recoveries[0].from;
  EXPECT_EQ(r.final_params, whole.final_params);  // bit for bit
  EXPECT_EQ(r.step_losses, whole.step_losses);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("restarting from"), std::string::npos) << warnings[0];
}

TEST(Restarts, BadInputIsNotRetried) {
  RunPlan plan = plan_with("hybrid");
  test::ScratchDir dir;
  plan.run.checkpoint_dir = dir.file("ckpt");
  plan.run.max_restarts = 3;
  World world = make_world(plan);
  RunInputs inputs = test::data_only(test::small_clusters());
  inputs.resume = dir.file("missing");
  try {
    run(plan, world, {}, inputs);
    ADD_FAILURE() << "did not throw";
  } catch (const InterruptedError&) {
    ADD_FAILURE() << "bad input taken for an interruption";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no such directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ptrain
