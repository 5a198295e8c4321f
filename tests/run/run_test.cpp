// run(plan, world): the one entry point, for every registered strategy and
// optimizer, on the native model (so it runs in the sanitizer builds too).
#include "run/run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>

#include "core/error.hpp"
#include "data/synthetic.hpp"
#include "run/report.hpp"
#include "run/world.hpp"
#include "run/run_fixtures.hpp"
#include "test_models.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::data_only;

// The test set is drawn from the same clusters (the seed fixes them); the first 960 samples train.
LoadedData clusters_1200() { return test::clusters(1200, 960, 12, 3, 21); }

RunPlan small_plan() { return test::softmax_plan(3, 8, 2); }

// every strategy x optimizer pair, the shared-memory ones included,
// either trains (the loss falls) or is refused with one line that names the reason.
TEST(Run, EveryStrategyTrainsWithEveryOptimizer) {
  const LoadedData data = clusters_1200();
  for (auto strategy : StrategyRegistry::names())
    for (auto optimizer : OptimizerRegistry::names()) {
      RunPlan plan = small_plan();
      plan.strategy = *StrategyRegistry::make(strategy);
      plan.optimizer = *OptimizerRegistry::make(optimizer);
      std::visit([](auto& o) { o.lr = 0.05f; }, plan.optimizer);  // a short run
      if (std::holds_alternative<SeqOptions>(plan.strategy)) plan.run.workers = 1;  // seq: one thread
      const std::string what = std::string(strategy) + " x " + std::string(optimizer);
      try {
        World world = make_world(plan);
        const RunResult r = run(plan, world, {}, test::inputs_for(plan, data));
        ASSERT_EQ(r.epochs.size(), 2u) << what;
        // The first loss: of the first step, or (shared memory) of the initial shared model.
        const double first = r.step_losses.empty() ? r.loss_curve.front().loss : r.step_losses.front();
        EXPECT_LT(r.epochs.back().train_loss, first) << what;
        EXPECT_GT(r.epochs.back().test_accuracy, 0.7) << what;  // chance: 1/3
        if (pipeline_stages_of(plan.strategy, plan.run.workers) == 0) {  // a pipeline trains a layered model
          EXPECT_EQ(r.parameters, 12u * 3u + 3u) << what;
        }
      } catch (const Error& e) {
        const std::string message = e.what();
        EXPECT_EQ(message.find('\n'), std::string::npos) << what << ": " << message;
        ADD_FAILURE() << what << " was refused: " << message;  // none is refused today
      }
    }
}

// Every strategy applies the schedule's rate to the updates of each epoch: with
// a step decay to a rate too small to move any parameter after epoch 1, the
// model evaluated after epoch 2 is the one evaluated after epoch 1, to the bit
// (its test loss is the same number); with the rate kept, it is not.
TEST(Run, EveryStrategyAppliesTheScheduledRateToEachEpochsUpdates) {
  const LoadedData data = clusters_1200();
  for (auto strategy : StrategyRegistry::names()) {
    RunPlan plan = small_plan();
    plan.strategy = *StrategyRegistry::make(strategy);
    plan.optimizer = SgdOptions{.lr = 0.05f};
    if (std::holds_alternative<SeqOptions>(plan.strategy)) plan.run.workers = 1;  // seq: one thread
    const std::string what(strategy);
    World kept_world = make_world(plan);
    const RunResult kept = run(plan, kept_world, {}, test::inputs_for(plan, data));
    ASSERT_EQ(kept.epochs.size(), 2u) << what;
    EXPECT_NE(kept.epochs[1].test_loss, kept.epochs[0].test_loss) << what;
    plan.run.lr_decay = LrDecay::Step;
    plan.run.lr_milestones = {1};
    plan.run.lr_gamma = 1e-30;
    World world = make_world(plan);
    const RunResult decayed = run(plan, world, {}, test::inputs_for(plan, data));
    ASSERT_EQ(decayed.epochs.size(), 2u) << what;
    EXPECT_EQ(decayed.epochs[1].test_loss, decayed.epochs[0].test_loss) << what;
    EXPECT_GT(decayed.epochs[0].test_accuracy, 0.7) << what;  // epoch 1 trained at the full rate
  }
}

TEST(Run, RefusesABadPlanNamingEveryField) {
  RunPlan plan = small_plan();
  plan.run.batch = 0;
  plan.strategy = PsBackupOptions{};
  std::get<PsBackupOptions>(plan.strategy).backup = 5;
  plan.codec = Fp16Options{};
  plan.strategy = SequentialOptions{};
  plan.run.time_limit = 3;
  World world = make_world(plan);
  const std::string message = test::error_message([&] { run(plan, world, {}, data_only(clusters_1200())); });
  EXPECT_NE(message.find("run.batch must be at least 1 (got 0)"), std::string::npos) << message;
  EXPECT_NE(message.find("codec: the sequential strategy exchanges no gradients"), std::string::npos) << message;
  EXPECT_NE(message.find("run.time_limit applies to the strategies that stop on time"), std::string::npos) << message;
}

TEST(Run, TheSamePlanGivesTheSameBitsAndTheReportHoldsThePlan) {
  RunPlan plan = small_plan();
  DgcOptions dgc;
  dgc.density = 0.1;
  plan.codec = dgc;
  plan.optimizer = MomentumOptions{};
  World world = make_world(plan);
  const RunResult a = run(plan, world, {}, data_only(clusters_1200()));
  const RunResult b = run(plan, world, {}, data_only(clusters_1200()));
  EXPECT_EQ(a.final_params, b.final_params);
  const auto report = make_report(resolved_plan(plan, world), world, a, {{}, utc_now()});
  EXPECT_EQ(report["plan"]["codec"]["name"], "dgc");
  EXPECT_EQ(report["plan"]["codec"]["density"], 0.1);
  EXPECT_EQ(report["plan"]["run"]["backend"], "local");
  EXPECT_EQ(report["run"]["parameters"], 39);
  EXPECT_GT(report["compression"]["ratio"].get<double>(), 2.0);
}

TEST(Run, ABroughtModelReplacesThePlansModel) {
  RunPlan plan = small_plan();
  plan.model = MlpOptions{};  // not built: the caller's factory wins
  size_t built = 0;
  RunInputs inputs = data_only(clusters_1200());
  inputs.model = [&](const ModelInput& in) {
    ++built;
    EXPECT_EQ(in.seed, plan.run.seed);
    return SoftmaxOptions{}.make(in);
  };
  World world = make_world(plan);
  const RunResult r = run(plan, world, {}, inputs);
  EXPECT_EQ(r.model, "softmax");
  EXPECT_EQ(built, 1u + 3u);  // a probe, then one replica per worker
}

// A replica that writes down the samples it trained on, in order.
class RecordingModel : public Model {
 public:
  RecordingModel(std::unique_ptr<Model> inner, std::vector<size_t>& log) : inner_(std::move(inner)), log_(log) {}
  std::string name() const override { return inner_->name(); }
  const FlatLayout& layout() const override { return inner_->layout(); }
  std::span<float> params() override { return inner_->params(); }
  std::span<float> grads() override { return inner_->grads(); }
  float forward_backward(const Batch& batch) override {
    log_.insert(log_.end(), batch.indices.begin(), batch.indices.end());
    return inner_->forward_backward(batch);
  }
  Metrics evaluate(const Dataset& data) override { return inner_->evaluate(data); }

 private:
  std::unique_ptr<Model> inner_;
  std::vector<size_t>& log_;
};

// ssp under the stale policy batch:K: whatever base batches the coordinator
// groups into each step (they depend on timing), an epoch is one pass over the
// data and every worker trains on the samples in the seed's order, run after run.
TEST(Run, SspWithGrowingBatchesKeepsEpochsAPassAndEachWorkersSampleOrder) {
  const LoadedData data = clusters_1200();  // 960 to train: 3 workers x 40 base batches of 8 a pass
  RunPlan plan = small_plan();
  plan.run.epochs = 3;
  plan.run.straggler_rank = 2;
  plan.run.straggler_factor = 20;
  SspOptions ssp;
  ssp.staleness = 6;
  ssp.stale_policy = "batch:3";
  plan.strategy = ssp;
  auto streams = [&] {
    std::mutex m;
    std::deque<std::vector<size_t>> logs;
    RunInputs inputs = data_only(data);
    inputs.model = [&](const ModelInput& in) -> std::unique_ptr<Model> {
      const std::lock_guard lock(m);
      return std::make_unique<RecordingModel>(SoftmaxOptions{}.make(in), logs.emplace_back());
    };
    World world = make_world(plan);
    const RunResult r = run(plan, world, {}, inputs);
    EXPECT_EQ(r.samples, 3u * 960);
    const CountHistogram& grown = r.servers.at(0).step_batches;
    uint64_t base_batches = 0;
    for (size_t b = 0; b < grown.bins.size(); ++b) base_batches += b * grown.bins[b];
    EXPECT_EQ(base_batches, 3u * 120);
    EXPECT_LE(grown.bins.size(), 4u) << "a step of more than 3 base batches";
    std::map<size_t, std::vector<size_t>> by_first;  // the probe trains on nothing
    size_t trained = 0;
    for (auto& log : logs)
      if (!log.empty()) trained += log.size(), by_first[log.front()] = std::move(log);
    EXPECT_EQ(by_first.size(), 3u);
    EXPECT_EQ(trained, 3u * 960);
    return by_first;
  };
  const auto first = streams(), second = streams();
  ASSERT_EQ(first.size(), second.size());
  for (const auto& [start, stream] : first) {
    ASSERT_TRUE(second.count(start)) << "a worker began elsewhere in the second run";
    const auto& other = second.at(start);
    const size_t common = std::min(stream.size(), other.size());
    EXPECT_GE(common, 320u) << "every worker trains on at least part of its share";
    EXPECT_TRUE(std::equal(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(common), other.begin()))
        << "worker starting at sample " << start << " saw another order";
  }
}

TEST(Run, WorkersZeroMeansOnePerCore) {
  RunPlan plan = small_plan();
  plan.run.workers = 0;
  const World world = make_world(plan);
  EXPECT_GE(world.workers, 1);
  EXPECT_EQ(resolved_plan(plan, world).run.workers, world.workers);
  EXPECT_NE(world.description().find("workers as threads"), std::string::npos);
}

// Found by tools/bad_inputs.sh: --workers 100000 on threads (or 100000
// shards) ended in std::system_error or an abort, not an error naming it.
TEST(Run, MoreThreadsThanAProcessRunsAreRefused) {
  RunPlan plan = small_plan();
  plan.run.workers = kMaxThreads + 1;
  EXPECT_EQ(test::error_message([&] { make_world(plan); }),
            "run.workers 1025: more threads than the 1024 one process runs (more workers run as MPI ranks under "
            "mpirun)");
  plan.run.workers = 2;
  PsSyncOptions ps;
  ps.servers = kMaxThreads;
  plan.strategy = ps;
  EXPECT_EQ(test::error_message([&] { make_world(plan); }),
            "strategy.servers 1024: with 2 workers, more threads than the 1024 one process runs");
}

// Found by tools/bad_inputs.sh: a test set of other samples than the training
// set's was read past its samples' end (softmax: exit 0 at 9%), or ended in a
// LibTorch stack trace (mlp).
TEST(Run, ATestSetOfOtherSamplesIsRefusedNamingTheShapes) {
  RunPlan plan = small_plan();
  LoadedData data = clusters_1200();
  data.test = make_gaussian_clusters(100, 11, 3, 21, 1.5f);
  World world = make_world(plan);
  EXPECT_EQ(test::error_message([&] { run(plan, world, {}, data_only(data)); }),
            "data: the test set's samples have shape [11], the training set's [12]");
  data.test = make_gaussian_clusters(100, 12, 4, 21, 1.5f);
  EXPECT_EQ(test::error_message([&] { run(plan, world, {}, data_only(data)); }),
            "data: the test set has 4 classes, the training set 3");
}

// A checkpoint directory that cannot be one is refused before training (it
// ended the run at its first checkpoint, with exit status 75: retry).
TEST(Run, ACheckpointDirectoryThatCannotBeWrittenIsRefusedBeforeTraining) {
  test::ScratchDir dir;
  test::write_bytes(dir.file("file"), {'x'});
  RunPlan plan = small_plan();
  for (const std::string& where : {dir.file("file"), dir.file("file/sub"), std::string("/proc/ck")}) {
    plan.run.checkpoint_dir = where;
    World world = make_world(plan);
    const std::string message = test::error_message([&] { run(plan, world, {}, data_only(clusters_1200())); });
    EXPECT_EQ(message.rfind("run.checkpoint_dir: checkpoint directory " + where + ": ", 0), 0u) << message;
  }
}

// Gradient accumulation: each worker's batch of 8 as 2 micro-batches of 4
// takes the whole batch's update, up to rounding; a token stream is refused.
TEST(Run, MicrobatchesTakeTheWholeBatchesUpdate) {
  RunPlan plan = small_plan();
  World world = make_world(plan);
  const RunResult whole = run(plan, world, {}, test::data_only(clusters_1200()));
  plan.run.microbatches = 2;
  const RunResult accumulated = run(plan, world, {}, test::data_only(clusters_1200()));
  EXPECT_EQ(accumulated.steps, whole.steps);
  EXPECT_NE(accumulated.final_params, whole.final_params);  // the rounding tells that the halves were taken
  EXPECT_LT(test::max_relative_difference(accumulated.final_params, whole.final_params), 1e-4);
  plan.run.microbatches = 3;
  const RunResult three = run(plan, world, {}, test::data_only(clusters_1200()));
  EXPECT_LT(test::max_relative_difference(three.final_params, whole.final_params), 1e-4);
}

}  // namespace
}  // namespace ptrain
