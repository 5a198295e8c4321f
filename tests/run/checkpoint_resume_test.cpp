// checkpoints and exact resume through run(). A run killed mid-way
// (a worker throws at a chosen step) and resumed from its newest checkpoint
// ends with the bits of the run that was never interrupted, for every codec
// and optimizer of the synchronous strategies; the parameter-server strategies
// that are not in lockstep resume at epoch ends.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>

#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "core/state_stream.hpp"
#include "data/synthetic.hpp"
#include "model/model_registry.hpp"
#include "run/resume.hpp"
#include "run/run.hpp"
#include "run/run_fixtures.hpp"
#include "state_records.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::data_only;


RunPlan resumable_plan() {
  RunPlan plan = test::softmax_plan(3, 8, 2);  // 30 steps an epoch
  plan.run.seed = 11;
  return plan;
}

struct Outcome {
  std::vector<float> params, step_losses;
  std::vector<EpochMetrics> epochs;
  CodecStats codec;
};

Outcome outcome(const RunResult& r) {
  CodecStats codec;
  for (const auto& c : r.codec) codec += c;
  return {r.final_params, r.step_losses, r.epochs, codec};
}

Outcome run_plan(const RunPlan& plan, const LoadedData& data, const std::string& resume = {}) {
  World world = make_world(plan);
  RunInputs inputs = data_only(data);
  inputs.resume = resume;
  return outcome(run(plan, world, {}, inputs));
}

// Runs `plan` with checkpoints every `every` steps into a scratch directory,
// kills it at step `kill_at`, resumes, and compares with the uninterrupted run.
void expect_exact_resume(RunPlan plan, const std::string& what, size_t every = 7, size_t kill_at = 38) {
  const LoadedData data = test::small_clusters();
  const Outcome whole = run_plan(plan, data);

  test::ScratchDir dir;
  plan.run.checkpoint_dir = dir.file("ckpt");
  plan.run.checkpoint_every = Cadence{every, 0};
  std::atomic<bool> armed{true};
  {
    World world = make_world(plan);
    RunInputs inputs = data_only(data);
    inputs.model = [&](const ModelInput& in) -> std::unique_ptr<Model> {
      return std::make_unique<test::FailingModel>(make_model(plan.model, in), kill_at, &armed);
    };
    const std::string message = test::error_message([&] { run(plan, world, {}, inputs); });
    EXPECT_NE(message.find("killed for the test"), std::string::npos) << what << ": " << message;
  }
  const FoundCheckpoint found = newest_checkpoint(plan.run.checkpoint_dir);
  EXPECT_EQ(found.step, (kill_at - 1) / every * every) << what;

  const Outcome resumed = run_plan(plan, data, plan.run.checkpoint_dir);
  EXPECT_EQ(resumed.params, whole.params) << what;  // bit for bit
  EXPECT_EQ(resumed.step_losses, whole.step_losses) << what;
  ASSERT_EQ(resumed.epochs.size(), whole.epochs.size()) << what;
  for (size_t e = 0; e < whole.epochs.size(); ++e) {
    EXPECT_EQ(resumed.epochs[e].train_loss, whole.epochs[e].train_loss) << what;
    EXPECT_EQ(resumed.epochs[e].test_accuracy, whole.epochs[e].test_accuracy) << what;
  }
  EXPECT_EQ(resumed.codec.encoded_bytes, whole.codec.encoded_bytes) << what;
  EXPECT_EQ(resumed.codec.selected, whole.codec.selected) << what;
}

TEST(CheckpointResume, HybridWithEveryCodecAndOptimizerEndsWithTheSameBits) {
  for (auto codec : CodecRegistry::names())
    for (auto optimizer : OptimizerRegistry::names()) {
      RunPlan plan = resumable_plan();
      plan.codec = *CodecRegistry::make(codec);
      plan.optimizer = *OptimizerRegistry::make(optimizer);
      std::visit([](auto& o) { o.lr = 0.05f; }, plan.optimizer);
      std::visit(
          [](auto& c) {
            if constexpr (requires { c.density; }) c.density = 0.2, c.warmup = 1;  // DGC: through its warm-up
            if constexpr (requires { c.ratio; }) c.ratio = 0.2;
            if constexpr (requires { c.rounding; }) c.rounding = Rounding::Stochastic;  // its generator
          },
          plan.codec);
      expect_exact_resume(plan, std::string(codec) + " x " + std::string(optimizer));
    }
}

TEST(CheckpointResume, SequentialEndsWithTheSameBits) {
  for (auto optimizer : OptimizerRegistry::names()) {
    RunPlan plan = resumable_plan();
    plan.strategy = SequentialOptions{};
    plan.optimizer = *OptimizerRegistry::make(optimizer);
    expect_exact_resume(plan, "sequential x " + std::string(optimizer));
  }
}

TEST(CheckpointResume, PsSyncWithEveryCodecEndsWithTheSameBits) {
  // ps-sync is lockstep, so it checkpoints inside epochs: each shard's
  // parameters, optimizer, decoder and counters, and shard 0's coordinator.
  for (auto codec : CodecRegistry::names())
    for (int servers : {1, 2}) {
      RunPlan plan = resumable_plan();
      PsSyncOptions ps;
      ps.servers = servers;
      plan.strategy = ps;
      plan.codec = *CodecRegistry::make(codec);
      std::visit(
          [](auto& c) {
            if constexpr (requires { c.density; }) c.density = 0.2, c.warmup = 1;
            if constexpr (requires { c.ratio; }) c.ratio = 0.2;
            if constexpr (requires { c.rounding; }) c.rounding = Rounding::Stochastic;
          },
          plan.codec);
      expect_exact_resume(plan, fmt::format("ps-sync, {} shard(s), {}", servers, codec));
    }
}

// With a pull codec each shard's copy of what every worker holds is in its
// checkpoint: the resumed pulls send the changes the uninterrupted run sent.
TEST(CheckpointResume, PsSyncWithEveryPullCodecEndsWithTheSameBits) {
  for (auto pull : PullCodecRegistry::names()) {
    RunPlan plan = resumable_plan();
    PsSyncOptions ps;
    ps.servers = 2;
    plan.strategy = ps;
    plan.pull = *PullCodecRegistry::make(pull);
    if (auto* topk = std::get_if<TopkPullOptions>(&plan.pull)) topk->ratio = 0.2, topk->refresh = 3;
    expect_exact_resume(plan, fmt::format("ps-sync, pull {}", pull));
  }
}

// The strategies whose workers take different steps checkpoint at epoch ends.
// A run that stops after one epoch with its checkpoint, resumed for a second,
// goes on from the shards' state (versions, statistics, clocks) and learns.
void expect_resume_at_epoch_end(RunPlan plan, const std::string& what) {
  const LoadedData data = test::small_clusters();
  plan.optimizer = SgdOptions{};
  std::visit([](auto& o) { o.lr = 0.05f; }, plan.optimizer);
  test::ScratchDir dir;
  plan.run.checkpoint_dir = dir.file("ckpt");
  plan.run.epochs = 1;
  World world = make_world(plan);
  const RunResult first = run(plan, world, {}, data_only(data));
  ASSERT_EQ(first.checkpoints, 1u) << what;
  RunPlan longer = plan;
  longer.run.epochs = 3;
  RunInputs inputs = data_only(data);
  inputs.resume = plan.run.checkpoint_dir;
  const RunResult resumed = run(longer, world, {}, inputs);
  ASSERT_EQ(resumed.epochs.size(), 3u) << what;
  EXPECT_EQ(resumed.epochs[0].train_loss, first.epochs[0].train_loss) << what;  // kept from the checkpoint
  EXPECT_EQ(resumed.resumed_at_step, first.worker_steps[0]) << what;
  ASSERT_EQ(resumed.servers.size(), first.servers.size()) << what;
  // The shards went on counting from their checkpointed state.
  EXPECT_GT(resumed.servers[0].updates, first.servers[0].updates) << what;
  uint64_t all_first = 0, all_resumed = 0;
  for (auto s : first.worker_steps) all_first += s;
  for (auto s : resumed.worker_steps) all_resumed += s;
  EXPECT_GT(all_resumed, all_first) << what;
  // And learned on: the resumed epochs improve on the first.
  EXPECT_LT(resumed.epochs[2].train_loss, first.epochs[0].train_loss) << what;
  EXPECT_GT(resumed.epochs[2].test_accuracy, 0.8) << what;
  EXPECT_EQ(newest_checkpoint(plan.run.checkpoint_dir).step, all_resumed) << what;
}

TEST(CheckpointResume, PsBackupSspAndAsyncResumeAtEpochEnds) {
  RunPlan plan = resumable_plan();
  plan.strategy = PsBackupOptions{};
  expect_resume_at_epoch_end(plan, "ps-backup");
  SspOptions ssp;
  ssp.servers = 2;
  plan.strategy = ssp;
  plan.codec = TopkOptions{};
  expect_resume_at_epoch_end(plan, "ssp, 2 shards, top-k");
  plan.strategy = AsyncOptions{};
  plan.codec = DgcOptions{};
  expect_resume_at_epoch_end(plan, "async, dgc");
}

TEST(CheckpointResume, AtEpochEndsAndFromTheLastCheckpointOfARunThatEnded) {
  RunPlan plan = resumable_plan();
  plan.codec = DgcOptions{};
  expect_exact_resume(plan, "every epoch", 30, 45);  // the checkpoint at step 30 ends epoch 1

  // A finished run's last checkpoint, resumed with more epochs, is the longer run.
  const LoadedData data = test::small_clusters();
  test::ScratchDir dir;
  RunPlan longer = resumable_plan();
  longer.run.epochs = 3;
  const Outcome whole = run_plan(longer, data);
  RunPlan first = resumable_plan();
  first.run.checkpoint_dir = dir.file("c");  // at the end of every epoch
  run_plan(first, data);
  EXPECT_EQ(newest_checkpoint(first.run.checkpoint_dir).step, 60u);
  const Outcome resumed = run_plan(longer, data, first.run.checkpoint_dir);
  EXPECT_EQ(resumed.params, whole.params);
  EXPECT_EQ(resumed.epochs.size(), 3u);
}

TEST(CheckpointResume, ACorruptNewestCheckpointFallsBackToTheOneBefore) {
  const LoadedData data = test::small_clusters();
  test::ScratchDir dir;
  RunPlan plan = resumable_plan();
  const Outcome whole = run_plan(plan, data);
  plan.run.checkpoint_dir = dir.file("c");
  plan.run.checkpoint_every = Cadence{10, 0};
  plan.run.max_steps = 50;  // ends after the checkpoints at 10 .. 50; the newest 3 are kept
  run_plan(plan, data);
  const CheckpointStore store(plan.run.checkpoint_dir, 3);
  std::filesystem::resize_file(store.part_path(50, store.newest()->run, 2), 17);
  std::vector<std::string> warnings;
  plan.run.max_steps = 0;
  World world = make_world(plan);
  RunCallbacks callbacks;
  callbacks.on_warning = [&](const std::string& w) { warnings.push_back(w); };
  RunInputs inputs = data_only(data);
  inputs.resume = plan.run.checkpoint_dir;
  const RunResult r = run(plan, world, callbacks, inputs);
  EXPECT_EQ(r.resumed_at_step, 40u);
  EXPECT_EQ(r.final_params, whole.params);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("rank-2.part"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("step-000000000050"), std::string::npos) << warnings[0];
}

// Names in `dir`, sorted.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Files may grow to `bytes` while it lives (RLIMIT_FSIZE); a longer write fails with EFBIG.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &before_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
    rlimit limit = before_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &before_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit before_{};
  void (*old_handler_)(int) = nullptr;
};

// A replica that counts its steps.
class CountingModel : public Model {
 public:
  CountingModel(std::unique_ptr<Model> inner, std::atomic<size_t>* steps) : inner_(std::move(inner)), steps_(steps) {}
  std::string name() const override { return inner_->name(); }
  const FlatLayout& layout() const override { return inner_->layout(); }
  std::span<float> params() override { return inner_->params(); }
  std::span<float> grads() override { return inner_->grads(); }
  float forward_backward(const Batch& batch) override {
    ++*steps_;
    return inner_->forward_backward(batch);
  }
  Metrics evaluate(const Dataset& data) override { return inner_->evaluate(data); }

 private:
  std::unique_ptr<Model> inner_;
  std::atomic<size_t>* steps_;
};

TEST(CheckpointResume, AFailedCheckpointStopsTheRunWithTheOnesBeforeIntactAndNothingLeft) {
  // Worker 0's part grows with the run's losses: with files limited to a size
  // between its part at step 10 and at step 15, the checkpoint at step 15
  // fails on worker 0 alone, after the others wrote their parts. The workers
  // agree on it before the next step: none takes step 16.
  const LoadedData data = test::small_clusters();
  RunPlan plan = resumable_plan();
  plan.codec = DgcOptions{};
  const Outcome whole = run_plan(plan, data);
  test::ScratchDir dir;
  plan.run.checkpoint_dir = dir.file("sizes");
  plan.run.checkpoint_every = Cadence{5, 0};
  plan.run.checkpoint_keep = 100;
  plan.run.max_steps = 15;
  run_plan(plan, data);
  const CheckpointStore sizes(plan.run.checkpoint_dir, 100);
  const uint64_t run_id = sizes.newest()->run;
  const auto part_size = [&](uint64_t step, int rank) {
    return std::filesystem::file_size(sizes.part_path(step, run_id, rank));
  };
  ASSERT_LT(part_size(10, 0), part_size(15, 0));
  for (int r = 1; r < 3; ++r) ASSERT_LT(part_size(15, r), part_size(10, 0));

  plan.run.checkpoint_dir = dir.file("ckpt");
  plan.run.max_steps = 0;
  std::string message;
  {
    const FileSizeLimit limit(part_size(10, 0) + (part_size(15, 0) - part_size(10, 0)) / 2);
    World world = make_world(plan);
    RunInputs inputs = data_only(data);
    std::mutex made;
    std::vector<std::unique_ptr<std::atomic<size_t>>> steps;  // per replica made
    inputs.model = [&](const ModelInput& in) -> std::unique_ptr<Model> {
      std::lock_guard lock(made);
      steps.push_back(std::make_unique<std::atomic<size_t>>(0));
      return std::make_unique<CountingModel>(make_model(plan.model, in), steps.back().get());
    };
    try {
      run(plan, world, {}, inputs);
      ADD_FAILURE() << "the run went on past its failed checkpoint";
    } catch (const InterruptedError& e) {
      message = e.what();  // a retry from the last checkpoint may succeed
    }
    size_t workers = 0;
    for (const auto& n : steps) {
      if (*n == 0) continue;  // not a worker's
      EXPECT_EQ(*n, 15u);
      ++workers;
    }
    EXPECT_EQ(workers, 3u);
  }
  EXPECT_NE(message.find("checkpoint of step 15 on worker 0: checkpoint " + plan.run.checkpoint_dir),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  // Steps 5 and 10, and neither the others' parts of step 15 nor a temporary file.
  const CheckpointStore store(plan.run.checkpoint_dir, 100);
  const uint64_t failed_run = store.newest()->run;
  std::vector<std::string> expected;
  for (uint64_t step : {5, 10}) {
    for (int r = 0; r < 3; ++r)
      expected.push_back(std::filesystem::path(store.part_path(step, failed_run, r)).filename().string());
    expected.push_back(std::filesystem::path(store.manifest_path(step)).filename().string());
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names_in(plan.run.checkpoint_dir), expected);

  const Outcome resumed = run_plan(plan, data, plan.run.checkpoint_dir);
  EXPECT_EQ(resumed.params, whole.params);
}

TEST(CheckpointResume, RefusesAPlanTheStateCannotFollow) {
  const LoadedData data = test::small_clusters();
  test::ScratchDir dir;
  RunPlan plan = resumable_plan();
  plan.run.checkpoint_dir = dir.file("c");
  run_plan(plan, data);
  RunPlan other = plan;
  other.run.batch = 16;
  other.optimizer = SgdOptions{};
  World world = make_world(other);
  RunInputs inputs = data_only(data);
  inputs.resume = plan.run.checkpoint_dir;
  const std::string message = test::error_message([&] { run(other, world, {}, inputs); });
  EXPECT_NE(message.find("optimizer.name: the checkpoint's is adam, this run's sgd"), std::string::npos) << message;
  EXPECT_NE(message.find("run.batch: the checkpoint's is 8, this run's 16"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);

  test::ScratchDir empty;
  inputs.resume = empty.path().string();
  EXPECT_EQ(test::error_message([&] { run(plan, world, {}, inputs); }),
            "checkpoint directory " + empty.path().string() + ": no checkpoint there");
  inputs.resume = empty.file("typo");  // resuming never creates the directory
  EXPECT_EQ(test::error_message([&] { run(plan, world, {}, inputs); }),
            "checkpoint directory " + inputs.resume + ": no such directory");
  EXPECT_FALSE(std::filesystem::exists(inputs.resume));
}

using test::edit;
using test::Records;

// Rewrites worker 1's part of the newest checkpoint in `dir` with `change`
// and commits it again: sizes and CRC-32s all valid, the state not.
void rewrite_worker_1(const std::string& dir, const std::function<void(Records&)>& change) {
  const CheckpointStore store(dir, 3);
  const FoundCheckpoint found = *store.newest();
  Records records = test::records_of(store.read_part(found, 1));
  change(records);
  std::vector<CheckpointPart> parts = found.parts;
  parts[1] = store.write_part(found.step, found.run, 1, test::state_of(records));
  store.commit(found.step, found.run, found.plan_json, parts);
}

// Found by fuzz/checkpoint_fuzz: parts that each read well but do not fit
// together (a worker at another step, a turn count that does not follow)
// left the workers waiting on each other until the timeout (for sequential,
// the run's timeout times the workers), and then named no checkpoint.
TEST(CheckpointResume, RefusesPartsThatDoNotFitTogetherAtOnce) {
  const LoadedData data = test::small_clusters();
  for (const bool sequential : {false, true}) {
    RunPlan plan = resumable_plan();
    if (sequential) plan.strategy = SequentialOptions{};
    plan.run.comm_timeout = 2;
    test::ScratchDir dir;
    plan.run.checkpoint_dir = dir.file("c");
    plan.run.checkpoint_every = Cadence{7, 0};
    plan.run.max_steps = 20;  // the newest checkpoint: after step 14
    run_plan(plan, data);
    plan.run.max_steps = 0;
    const auto resume_error = [&] {
      World world = make_world(plan);
      RunInputs inputs = data_only(data);
      inputs.resume = plan.run.checkpoint_dir;
      return test::error_message([&] { run(plan, world, {}, inputs); });
    };
    const std::string manifest = newest_checkpoint(plan.run.checkpoint_dir).manifest;
    const std::string what = sequential ? "sequential" : "hybrid";

    // One step less, and one loss less in its epoch: a part that reads well alone.
    rewrite_worker_1(plan.run.checkpoint_dir, [&](Records& r) {
      edit<uint64_t>(r, "step", [](auto& v) { v[0] -= 1; });
      edit<float>(r, "epoch.losses", [](auto& v) { v.pop_back(); });
      if (sequential) edit<uint64_t>(r, "sequential.local_step", [](auto& v) { v[0] -= 1; });
    });
    EXPECT_EQ(resume_error(),
              "checkpoint " + manifest +
                  ": the workers' parts are at different steps (worker 0's at 14, worker 1's at 13)")
        << what;

    // A step that is not where its epoch and losses say.
    rewrite_worker_1(plan.run.checkpoint_dir,
                     [&](Records& r) { edit<float>(r, "epoch.losses", [](auto& v) { v.push_back(1.0f); }); });
    EXPECT_EQ(resume_error(),
              "checkpoint " + manifest +
                  ": worker 1's part is at step 13, which is not 14 steps into epoch 1 of 30 steps each")
        << what;

    if (sequential) {  // every step in place, but worker 1's own turns behind
      rewrite_worker_1(plan.run.checkpoint_dir,
                       [&](Records& r) { edit<uint64_t>(r, "step", [](auto& v) { v[0] += 1; }); });
      EXPECT_EQ(resume_error(),
                "sequential: worker 1 resumes after 13 turns of its own, but 42 turns of 3 workers "
                "were taken in all: the checkpoint's parts do not fit together");
    }
  }
}

// The strategies whose workers take different steps resume each worker at
// its own step (the checks above refused their checkpoints once both were
// on main), and refuse a part inside an epoch, which they never write.
TEST(CheckpointResume, WorkersAtTheirOwnStepsResumeOnlyAtEpochEnds) {
  const LoadedData data = test::small_clusters();
  RunPlan plan = resumable_plan();
  plan.strategy = AsyncOptions{};
  plan.run.comm_timeout = 2;
  test::ScratchDir dir;
  plan.run.checkpoint_dir = dir.file("c");
  plan.run.epochs = 1;
  World world = make_world(plan);
  const RunResult first = run(plan, world, {}, data_only(data));
  ASSERT_EQ(first.checkpoints, 1u);
  const auto resume = [&](const RunPlan& p) {
    World w = make_world(p);
    RunInputs inputs = data_only(data);
    inputs.resume = plan.run.checkpoint_dir;
    return run(p, w, {}, inputs);
  };
  RunPlan longer = plan;
  longer.run.epochs = 2;
  rewrite_worker_1(plan.run.checkpoint_dir,
                   [&](Records& r) { edit<float>(r, "epoch.losses", [](auto& v) { v.push_back(1.0f); }); });
  EXPECT_EQ(
      test::error_message([&] { resume(longer); }),
      "checkpoint " + newest_checkpoint(plan.run.checkpoint_dir).manifest +
          ": worker 1's part is 1 steps into epoch 2, but this strategy checkpoints only at the end of an "
          "epoch");

  // Worker 1 a step on (async workers take steps at their own pace): resumes.
  rewrite_worker_1(plan.run.checkpoint_dir, [&](Records& r) {
    edit<float>(r, "epoch.losses", [](auto& v) { v.pop_back(); });
    edit<uint64_t>(r, "step", [](auto& v) { v[0] += 1; });
  });
  const RunResult resumed = resume(longer);
  EXPECT_EQ(resumed.epochs.size(), 2u);
  EXPECT_EQ(resumed.resumed_at_step, first.worker_steps[0]);
}

TEST(CheckpointResume, EveryStrategyCheckpointsAndTheCadenceNeedsADirectory) {
  // The shared-memory strategies were the last without checkpoints
  // (tests/run/shm_checkpoint_resume_test.cpp); a strategy added without
  // them is refused a directory by the plan, naming these.
  for (auto name : StrategyRegistry::names()) EXPECT_TRUE(checkpoints(*StrategyRegistry::make(name))) << name;
  EXPECT_EQ(strategies_with_checkpoints(),
            "hybrid, sequential, ps-sync, ps-backup, ssp, async, pipeline, seq, mutex, rwlock, hogwild and leashed");
  RunPlan plan = resumable_plan();
  plan.strategy = HogwildOptions{};
  plan.run.checkpoint_dir = "/tmp/never";
  plan.run.checkpoint_every = Cadence{0, 30};
  EXPECT_TRUE(check_plan(plan).empty()) << check_plan(plan).joined();
  plan = resumable_plan();
  plan.run.checkpoint_every = Cadence{100, 0};
  EXPECT_NE(check_plan(plan).joined().find("run.checkpoint_every applies only with a checkpoint directory"),
            std::string::npos);
}

}  // namespace
}  // namespace ptrain
