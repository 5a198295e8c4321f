// Checkpoints and exact resume for the shared-memory strategies, through run(): checkpoints in
// the trainer's store, and runs resumed from them. seq (one thread) killed
// midway and resumed ends with the bits of the run never interrupted;
// mutex, rwlock, hogwild and leashed, stopped by run.max_steps or killed and
// resumed, reach the training loss and test accuracy of the uninterrupted run
// within a stated tolerance, which the half-trained run they went on from
// does not; restarts and rollbacks go on from their checkpoints.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "model/model_registry.hpp"
#include "run/resume.hpp"
#include "run/run_fixtures.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {


// 3 threads of batch 8 on 720 samples: 90 gradients an epoch, 180 in all, a
// loss check every 15. The step is small, so that half the run is clearly
// behind the whole of it.
RunPlan shm_plan(std::string_view strategy, int threads = 3) {
  RunPlan plan = test::softmax_plan(threads, 8, 2);
  plan.strategy = *StrategyRegistry::make(strategy);
  std::visit(
      [](auto& o) {
        if constexpr (requires { o.check_every; }) o.check_every = 15, o.loss_sample = 0;
      },
      plan.strategy);
  plan.optimizer = SgdOptions{.lr = 0.01f};
  plan.run.seed = 7;
  return plan;
}

// A replica that counts the gradients it computes (all replicas together).
class CountedModel : public Model {
 public:
  CountedModel(std::unique_ptr<Model> inner, std::atomic<uint64_t>* count) : inner_(std::move(inner)), count_(count) {}
  std::string name() const override { return inner_->name(); }
  const FlatLayout& layout() const override { return inner_->layout(); }
  std::span<float> params() override { return inner_->params(); }
  std::span<float> grads() override { return inner_->grads(); }
  float forward_backward(const Batch& batch) override {
    count_->fetch_add(1, std::memory_order_relaxed);
    return inner_->forward_backward(batch);
  }
  Metrics evaluate(const Dataset& data) override { return inner_->evaluate(data); }

 private:
  std::unique_ptr<Model> inner_;
  std::atomic<uint64_t>* count_;
};

RunResult run_plan(const RunPlan& plan, const std::string& resume = {}, const RunInputs& base = {}) {
  World world = make_world(plan);
  RunInputs inputs = base;
  if (!inputs.data) inputs.data = test::small_clusters();
  inputs.resume = resume;
  return run(plan, world, {}, inputs);
}

// Runs `plan` until a replica fails at its gradient `fail_at`; the run must end as interrupted.
void run_until_killed(const RunPlan& plan, size_t fail_at) {
  std::atomic<bool> armed{true};
  RunInputs inputs;
  inputs.model = [&](const ModelInput& in) -> std::unique_ptr<Model> {
    return std::make_unique<test::FailingModel>(make_model(plan.model, in), fail_at, &armed);
  };
  try {
    run_plan(plan, {}, inputs);
    ADD_FAILURE() << "did not fail";
  } catch (const InterruptedError& e) {  // exit 75: resume from the last checkpoint
    EXPECT_NE(std::string(e.what()).find("killed for the test"), std::string::npos) << e.what();
  }
}

TEST(ShmCheckpointResume, SeqKilledMidwayResumesToTheSameBits) {
  for (auto optimizer : OptimizerRegistry::names()) {
    const std::string what(optimizer);
    RunPlan plan = shm_plan("seq", 1);  // 90 gradients an epoch, 180 in all
    plan.optimizer = *OptimizerRegistry::make(optimizer);
    const RunResult whole = run_plan(plan);

    test::ScratchDir dir;
    plan.run.checkpoint_dir = dir.file("ckpt");
    plan.run.checkpoint_every = Cadence{7, 0};
    run_until_killed(plan, 100);  // 99 gradients done
    const FoundCheckpoint found = newest_checkpoint(plan.run.checkpoint_dir);
    EXPECT_EQ(found.step, 98u) << what;

    const RunResult resumed = run_plan(plan, plan.run.checkpoint_dir);
    EXPECT_EQ(resumed.resumed_from, found.manifest) << what;
    EXPECT_EQ(resumed.resumed_at_step, 98u) << what;
    EXPECT_EQ(resumed.checkpoints, 11u) << what;  // after 105, 112, ..., 175 gradients
    EXPECT_EQ(resumed.final_params, whole.final_params) << what;  // bit for bit
    ASSERT_EQ(resumed.epochs.size(), whole.epochs.size()) << what;
    for (size_t e = 0; e < whole.epochs.size(); ++e) {
      EXPECT_EQ(resumed.epochs[e].train_loss, whole.epochs[e].train_loss) << what;
      EXPECT_EQ(resumed.epochs[e].test_accuracy, whole.epochs[e].test_accuracy) << what;
      EXPECT_EQ(resumed.epochs[e].steps, whole.epochs[e].steps) << what;
    }
    ASSERT_EQ(resumed.loss_curve.size(), whole.loss_curve.size()) << what;
    for (size_t i = 0; i < whole.loss_curve.size(); ++i) {
      EXPECT_EQ(resumed.loss_curve[i].step, whole.loss_curve[i].step) << what;
      EXPECT_EQ(resumed.loss_curve[i].loss, whole.loss_curve[i].loss) << what;
    }
    EXPECT_EQ(resumed.worker_steps, whole.worker_steps) << what;
    EXPECT_EQ(resumed.samples, whole.samples) << what;
  }
}

// How far a resumed asynchronous run may end from the uninterrupted one: its
// training loss (on the whole training set, about 0.22) and its test
// accuracy (about 0.945). In 48 resumed runs of these settings (2026-11-26,
// the 2-core VM) the threads' timing moved them by at most 0.0035 and
// 0.0056, and under ThreadSanitizer, whose scheduling differs, once by 0.0107
// in loss; the run stopped halfway was 0.076 to 0.089 behind in loss, so a
// resume that lost the state fails (checked below, with a margin).
constexpr double kLossTolerance = 0.02;
constexpr double kAccuracyTolerance = 0.02;

struct Quality {
  double loss = 0, accuracy = 0;
};

Quality quality(const RunResult& r) { return {r.shared_memory->final_loss, r.epochs.back().test_accuracy}; }

void expect_same_quality(const RunResult& resumed, const Quality& whole, const std::string& what) {
  const Quality q = quality(resumed);
  EXPECT_NEAR(q.loss, whole.loss, kLossTolerance) << what;
  EXPECT_NEAR(q.accuracy, whole.accuracy, kAccuracyTolerance) << what;
  EXPECT_EQ(resumed.shared_memory->gradients, 180u) << what;  // those before the checkpoint included
  EXPECT_EQ(resumed.shared_memory->staleness.total(), resumed.shared_memory->totals.applied) << what;
  EXPECT_EQ(resumed.epochs.size(), 2u) << what;
  EXPECT_EQ(resumed.loss_curve.front().step, 0u) << what;  // the curve from the start
}

TEST(ShmCheckpointResume, AsynchronousRunsStoppedOrKilledResumeToTheSameQuality) {
  for (auto strategy : {"mutex", "rwlock", "hogwild", "leashed"}) {
    const std::string what(strategy);
    RunPlan plan = shm_plan(strategy);
    const RunResult whole_run = run_plan(plan);
    const Quality whole = quality(whole_run);
    ASSERT_EQ(whole_run.shared_memory->gradients, 180u) << what;

    // Stopped by run.max_steps halfway (30 steps of 3 threads), a checkpoint every 10 steps.
    test::ScratchDir dir;
    RunPlan stopped = plan;
    stopped.run.checkpoint_dir = dir.file("ckpt");
    stopped.run.checkpoint_every = Cadence{10, 0};
    stopped.run.max_steps = 30;
    const RunResult half = run_plan(stopped);
    EXPECT_EQ(half.shared_memory->stopped_by, "max steps") << what;
    EXPECT_EQ(half.checkpoints, 3u) << what;  // after 30, 60 and 90 gradients
    // The half-trained run is outside the tolerance: a resume that lost the state would fail.
    EXPECT_GT(quality(half).loss - whole.loss, 2 * kLossTolerance) << what;

    // Resumed without the limit, it computes only the other half, and ends where the whole run did.
    RunPlan rest = stopped;
    rest.run.max_steps = 0;
    std::atomic<uint64_t> computed{0};
    RunInputs counted;
    counted.model = [&](const ModelInput& in) -> std::unique_ptr<Model> {
      return std::make_unique<CountedModel>(make_model(plan.model, in), &computed);
    };
    const RunResult resumed = run_plan(rest, stopped.run.checkpoint_dir, counted);
    EXPECT_EQ(computed.load(), 90u) << what;
    EXPECT_EQ(resumed.resumed_at_step, 90u) << what;
    EXPECT_EQ(resumed.epochs[0].train_loss, half.epochs[0].train_loss) << what;  // epoch 1 from the checkpoint
    expect_same_quality(resumed, whole, what + ", stopped by max steps");

    // Killed midway (a replica fails at its 40th gradient, about 120 in all).
    test::ScratchDir killed_dir;
    RunPlan killed = plan;
    killed.run.checkpoint_dir = killed_dir.file("ckpt");
    killed.run.checkpoint_every = Cadence{5, 0};
    run_until_killed(killed, 40);
    const FoundCheckpoint found = newest_checkpoint(killed.run.checkpoint_dir);
    EXPECT_EQ(found.step % 15, 0u) << what;
    EXPECT_GT(found.step, 0u) << what;
    expect_same_quality(run_plan(killed, killed.run.checkpoint_dir), whole, what + ", killed");
  }
}

TEST(ShmCheckpointResume, ARestartGoesOnFromTheLastCheckpoint) {
  RunPlan plan = shm_plan("seq", 1);
  const RunResult whole = run_plan(plan);
  test::ScratchDir dir;
  plan.run.checkpoint_dir = dir.file("ckpt");
  plan.run.checkpoint_every = Cadence{20, 0};
  plan.run.max_restarts = 1;
  std::atomic<bool> armed{true};
  RunInputs inputs;
  inputs.model = [&](const ModelInput& in) -> std::unique_ptr<Model> {
    return std::make_unique<test::FailingModel>(make_model(plan.model, in), 50, &armed);
  };
  const RunResult r = run_plan(plan, {}, inputs);
  ASSERT_EQ(r.recoveries.size(), 1u);
  EXPECT_EQ(r.recoveries[0].kind, "restart");
  EXPECT_NE(r.recoveries[0].from.find("step-000000000040.ckpt"), std::string::npos) << r.recoveries[0].from;
  EXPECT_EQ(r.final_params, whole.final_params);
}

TEST(ShmCheckpointResume, ARollbackGoesBackToTheLastCheckpointWithASmallerStep) {
  // Resumed from a calm run's checkpoint with a step that explodes: the
  // rollback goes back to that checkpoint, not to the start, and trains on.
  RunPlan calm = shm_plan("leashed");
  test::ScratchDir dir;
  calm.run.checkpoint_dir = dir.file("ckpt");
  calm.run.max_steps = 30;
  calm.run.checkpoint_every = Cadence{30, 0};
  run_plan(calm);
  RunPlan wild = calm;
  wild.run.max_steps = 0;
  wild.optimizer = SgdOptions{.lr = 1e38f};  // the logits overflow: the loss becomes inf or nan
  wild.run.on_diverge = OnDiverge::Rollback;
  wild.run.rollback_lr_scale = 1e-40;
  wild.run.max_rollbacks = 1;
  const RunResult r = run_plan(wild, calm.run.checkpoint_dir);
  EXPECT_FALSE(r.diverged) << r.diverged_why;
  ASSERT_EQ(r.recoveries.size(), 1u);
  EXPECT_EQ(r.recoveries[0].kind, "rollback");
  EXPECT_NE(r.recoveries[0].from.find("step-000000000090.ckpt"), std::string::npos) << r.recoveries[0].from;
  EXPECT_EQ(r.shared_memory->gradients, 180u);
  EXPECT_GT(r.epochs.back().test_accuracy, 0.8);
}

TEST(ShmCheckpointResume, RefusesWhatTheStateCannotFollow) {
  RunPlan plan = shm_plan("hogwild");
  test::ScratchDir dir;
  plan.run.checkpoint_dir = dir.file("ckpt");
  plan.run.max_steps = 10;
  run_plan(plan);
  RunPlan other = plan;
  other.run.workers = 2;
  other.strategy = LeashedOptions{};
  std::string message = test::error_message([&] { run_plan(other, plan.run.checkpoint_dir); });
  EXPECT_NE(message.find("strategy.name: the checkpoint's is hogwild, this run's leashed"), std::string::npos)
      << message;
  EXPECT_NE(message.find("run.workers: the checkpoint's is 3, this run's 2"), std::string::npos) << message;
  // A trainer's checkpoint is not a shared-memory run's.
  RunPlan hybrid = test::softmax_plan(3, 8, 1);
  test::ScratchDir other_dir;
  hybrid.run.checkpoint_dir = other_dir.file("ckpt");
  run_plan(hybrid);
  RunPlan seq = shm_plan("seq", 3);
  seq.strategy = MutexOptions{};
  message = test::error_message([&] { run_plan(seq, hybrid.run.checkpoint_dir); });
  EXPECT_NE(message.find("strategy.name: the checkpoint's is hybrid, this run's mutex"), std::string::npos) << message;
}

}  // namespace
}  // namespace ptrain
