// Checkpoints of the shared-memory runner, taken between rounds while every
// thread waits, and runs resumed from them: seq goes on to the bits of the
// run never interrupted; the consistent asynchronous algorithms keep every
// update and their optimizer state (the counting model tells); checkpoints
// add no loss check; a state this run cannot go on from is refused, naming it.
#include <gtest/gtest.h>

#include <map>

#include "core/state_stream.hpp"
#include "counting_model.hpp"
#include "data/synthetic.hpp"
#include "shm/async_sgd.hpp"
#include "state_records.hpp"
#include "softmax_replicas.hpp"
#include "shm_strategy_configs.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

// Every checkpoint a run hands over, by the gradients it was taken after.
using Taken = std::map<uint64_t, std::vector<std::byte>>;

ShmCallbacks keeping(Taken& taken) {
  ShmCallbacks callbacks;
  callbacks.on_checkpoint = [&taken](uint64_t gradients, std::vector<std::byte> state) {
    EXPECT_FALSE(taken.contains(gradients)) << gradients;
    taken[gradients] = std::move(state);
  };
  return callbacks;
}

ShmConfig seq_config(OptimizerKind optimizer) {
  ShmConfig c;
  test::set_algorithm(c, "seq");
  c.threads = 1;
  c.batch = 8;
  c.optimizer = {.kind = optimizer, .lr = optimizer == OptimizerKind::Adam ? 0.01f : 0.05f};
  c.epochs = 3;  // 38 gradients an epoch (300 samples, batch 8), 113 in all
  c.check_every = 10;
  c.seed = 5;
  return c;
}

void expect_same(const AsyncSgdResult& a, const AsyncSgdResult& b, const std::string& what) {
  EXPECT_EQ(a.final_params, b.final_params) << what;  // bit for bit
  ASSERT_EQ(a.checks.size(), b.checks.size()) << what;
  for (size_t i = 0; i < a.checks.size(); ++i) {
    EXPECT_EQ(a.checks[i].updates, b.checks[i].updates) << what << ", check " << i;
    EXPECT_EQ(a.checks[i].loss, b.checks[i].loss) << what << ", check " << i;
  }
  ASSERT_EQ(a.epochs.size(), b.epochs.size()) << what;
  for (size_t e = 0; e < a.epochs.size(); ++e) {
    EXPECT_EQ(a.epochs[e].gradients, b.epochs[e].gradients) << what << ", epoch " << e + 1;
    EXPECT_EQ(a.epochs[e].train_loss, b.epochs[e].train_loss) << what << ", epoch " << e + 1;
    EXPECT_EQ(a.epochs[e].test.loss, b.epochs[e].test.loss) << what << ", epoch " << e + 1;
  }
  EXPECT_EQ(a.gradients, b.gradients) << what;
  EXPECT_EQ(a.totals.applied, b.totals.applied) << what;
  EXPECT_EQ(a.staleness.bins, b.staleness.bins) << what;
  EXPECT_EQ(a.stopped_by, b.stopped_by) << what;
}

TEST(AsyncSgdResume, SeqGoesOnFromEveryCheckpointToTheSameBits) {
  const Dataset all = make_gaussian_clusters(400, 6, 3, 2);
  const Dataset train = all.head(300);
  for (auto optimizer : {OptimizerKind::Sgd, OptimizerKind::Momentum, OptimizerKind::Adam}) {
    const std::string what = to_string(optimizer);
    ShmConfig c = seq_config(optimizer);
    const AsyncSgdResult whole = run_async_sgd(c, train, train, test::softmax_replicas(train), {}, &all);
    // The same run with a checkpoint every 25 gradients: the same run, checks included.
    c.checkpoint_every = 25;
    Taken taken;
    const AsyncSgdResult checkpointed = run_async_sgd(c, train, train, test::softmax_replicas(train), keeping(taken), &all);
    expect_same(checkpointed, whole, what + ", with checkpoints");
    ASSERT_EQ(taken.size(), 4u) << what;  // after 25, 50, 75 and 100 gradients
    EXPECT_EQ(taken.begin()->first, 25u);
    for (const auto& [gradients, state] : taken) {
      const ShmResume resume{state, "checkpoint at " + std::to_string(gradients)};
      const AsyncSgdResult resumed = run_async_sgd(c, train, train, test::softmax_replicas(train), {}, &all, &resume);
      expect_same(resumed, whole, what + ", resumed after " + std::to_string(gradients));
    }
  }
}

TEST(AsyncSgdResume, AtEveryEpochEndAndWhereTheRunEndsWithoutACadence) {
  const Dataset all = make_gaussian_clusters(400, 6, 3, 2);
  const Dataset train = all.head(300);
  ShmConfig c = seq_config(OptimizerKind::Sgd);
  c.epochs = 2.5;  // epochs end after 38 and 75 gradients; the run after 94
  Taken taken;
  const AsyncSgdResult r = run_async_sgd(c, train, train, test::softmax_replicas(train), keeping(taken), &all);
  std::vector<uint64_t> at;
  for (const auto& [gradients, state] : taken) at.push_back(gradients);
  EXPECT_EQ(at, (std::vector<uint64_t>{38, 75, 94}));
  // The last one, resumed for a longer run, is the longer run.
  ShmConfig longer = c;
  longer.epochs = 3;
  const AsyncSgdResult whole = run_async_sgd(longer, train, train, test::softmax_replicas(train), {}, &all);
  const ShmResume resume{taken.at(94), "the last"};
  const AsyncSgdResult resumed = run_async_sgd(longer, train, train, test::softmax_replicas(train), {}, &all, &resume);
  EXPECT_EQ(resumed.final_params, whole.final_params);
  EXPECT_EQ(resumed.gradients, whole.gradients);
  ASSERT_EQ(resumed.epochs.size(), 3u);
  EXPECT_EQ(resumed.epochs[2].train_loss, whole.epochs[2].train_loss);
  EXPECT_EQ(r.epochs.size(), 3u);  // the run's own: two whole epochs and half of the third
}

// Several threads and Adam on the counting model: every gradient is the
// same, so a consistent algorithm's parameters after N updates are one
// function of N, whatever the threads' order, and of Adam's moments and step
// count. A run resumed from the middle ends with the bits of the run never
// interrupted only if every update and the optimizer's state came back.
TEST(AsyncSgdResume, ConsistentAlgorithmsKeepEveryUpdateAndTheirOptimizerState) {
  const Dataset data = make_gaussian_clusters(64, 2, 2, 1);
  for (std::string_view algorithm : {"mutex", "rwlock", "leashed"}) {
    const std::string what = std::string(algorithm);
    ShmConfig c;
    test::set_algorithm(c, algorithm);
    c.threads = 3;
    c.batch = 8;
    c.optimizer = {.kind = OptimizerKind::Adam, .lr = 0.5f};
    c.epochs = 60;  // 480 gradients
    c.check_every = 100;
    c.seed = 4;
    auto counting = [] { return std::make_unique<test::CountingModel>(16); };
    const AsyncSgdResult whole = run_async_sgd(c, data, data, counting);
    c.checkpoint_every = 90;
    Taken taken;
    run_async_sgd(c, data, data, counting, keeping(taken));
    ASSERT_EQ(taken.size(), 5u) << what;
    const ShmResume resume{taken.at(270), "after 270"};
    const AsyncSgdResult resumed = run_async_sgd(c, data, data, counting, {}, nullptr, &resume);
    EXPECT_EQ(resumed.final_params, whole.final_params) << what;
    EXPECT_EQ(resumed.gradients, 480u) << what;
    EXPECT_EQ(resumed.totals.applied, 480u) << what;
    EXPECT_EQ(resumed.staleness.total(), 480u) << what;
    uint64_t by_threads = 0;
    for (auto g : resumed.thread_gradients) by_threads += g;
    EXPECT_EQ(by_threads, 480u) << what;
    ASSERT_FALSE(resumed.checks.empty());
    EXPECT_EQ(resumed.checks.front().updates, 0u) << what;  // the curve from the start, as the checkpoint held it
    EXPECT_EQ(resumed.checks.back().updates, 480u) << what;
    // The same checkpoint with Adam's moments lost ends elsewhere: the test can tell.
    const std::string moments = algorithm == "leashed" ? "leashed.optimizer_state" : "optimizer.m";
    const std::vector<std::byte> without_moments =
        test::edited<float>(taken.at(270), moments, [](auto& v) { std::fill(v.begin(), v.end(), 0.0f); });
    const ShmResume lost{without_moments, "moments lost"};
    EXPECT_NE(run_async_sgd(c, data, data, counting, {}, nullptr, &lost).final_params, whole.final_params) << what;
  }
}

TEST(AsyncSgdResume, HogwildGoesOnFromItsThreadsOptimizerState) {
  const Dataset all = make_gaussian_clusters(600, 10, 3, 4);
  const Dataset train = all.head(480);
  ShmConfig c;
  test::set_algorithm(c, "hogwild");
  c.threads = 3;
  c.batch = 8;
  c.optimizer = {.kind = OptimizerKind::Momentum, .lr = 0.02f};
  c.epochs = 4;  // 240 gradients
  c.check_every = 30;
  c.seed = 2;
  c.checkpoint_every = 60;
  Taken taken;
  const AsyncSgdResult whole = run_async_sgd(c, train, train, test::softmax_replicas(train), keeping(taken), &all);
  const ShmResume resume{taken.at(120), "after 120"};
  const AsyncSgdResult resumed = run_async_sgd(c, train, train, test::softmax_replicas(train), {}, &all, &resume);
  EXPECT_EQ(resumed.gradients, 240u);
  EXPECT_EQ(resumed.staleness.total(), resumed.totals.applied);
  ASSERT_EQ(resumed.epochs.size(), 4u);
  EXPECT_EQ(resumed.epochs[0].train_loss, whole.epochs[0].train_loss);  // from the checkpoint
  EXPECT_EQ(resumed.epochs[1].train_loss, whole.epochs[1].train_loss);
  // The same quality: within 0.05 of the uninterrupted run's training loss.
  EXPECT_NEAR(resumed.final_loss, whole.final_loss, 0.05);
  EXPECT_GT(resumed.epochs.back().test.accuracy, 0.9);
}

TEST(AsyncSgdResume, RefusesAStateThisRunCannotGoOnFrom) {
  const Dataset data = make_gaussian_clusters(64, 2, 2, 1);
  ShmConfig c;
  test::set_algorithm(c, "leashed");
  c.threads = 2;
  c.batch = 8;
  c.optimizer = {.kind = OptimizerKind::Sgd, .lr = 0.1f};
  c.epochs = 10;  // 80 gradients
  c.check_every = 20;
  c.checkpoint_every = 40;
  c.backoff = {BackoffKind::Exponential, 1, 100};
  Taken taken;
  auto counting = [] { return std::make_unique<test::CountingModel>(4); };
  run_async_sgd(c, data, data, counting, keeping(taken));
  const std::vector<std::byte> good = taken.at(40);
  auto resume_error = [&](const ShmConfig& config, const std::vector<std::byte>& state) {
    const ShmResume resume{state, "ckpt"};
    return test::error_message([&] { run_async_sgd(config, data, data, counting, {}, nullptr, &resume); });
  };
  ShmConfig other = c;
  test::set_algorithm(other, "mutex");
  EXPECT_EQ(resume_error(other, good), "ckpt: holds the state of strategy leashed, this run's is mutex");
  other = c;
  other.threads = 3;
  EXPECT_EQ(resume_error(other, good), "ckpt: holds 2 threads' state, this run has 3");
  other = c;
  other.epochs = 4;  // 32 gradients
  EXPECT_EQ(resume_error(other, good),
            "ckpt: taken after 40 gradients of all threads, past this run's end at 32 (a longer run.epochs or "
            "run.max_steps?)");
  EXPECT_EQ(resume_error(c, std::vector<std::byte>(good.begin(), good.end() - 3)).rfind("ckpt: ", 0), 0u);

  // Crafted records that each read well: an order that is no pass over the
  // data (it indexes the training set), a backoff that would wait for hours,
  // threads whose gradients do not add up to the run's position, an epoch
  // far past it.
  const std::vector<std::pair<std::vector<std::byte>, std::string>> cases = {
      {test::edited<size_t>(good, "thread1.order", [](auto& v) { v[3] = 64; }),
       "ckpt: record 'thread1.order' is not an order of this run's 64 training samples"},
      {test::edited<size_t>(good, "thread0.order", [](auto& v) { v[5] = v[6]; }),
       "ckpt: record 'thread0.order' is not an order of this run's 64 training samples"},
      {test::edited<uint64_t>(good, "thread0.order.at", [](auto& v) { v[0] = 65; }),
       "ckpt: record 'thread0.order.at' is 65, past the end of the order (64 samples)"},
      {test::edited<double>(good, "thread1.backoff.delay_us", [](auto& v) { v[0] = 1e13; }),
       "ckpt: record 'thread1.backoff.delay_us' holds 10000000000000 us, outside this run's backoff bounds [1, 100]"},
      {test::edited<uint64_t>(good, "thread0.gradients", [](auto& v) { v[0] += 1; }),
       "does not fit its threads' 41 gradients"},
      // The position's fields: gradients, last check, epoch, ...
      {test::edited<uint64_t>(good, "shm.position", [](auto& v) { v[2] = uint64_t{1} << 62; }),
       "epoch 4611686018427387904 from"},
  };
  for (const auto& [state, expected] : cases) {
    const std::string message = resume_error(c, state);
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
  // And the state unedited goes on.
  const ShmResume resume{good, "ckpt"};
  EXPECT_EQ(run_async_sgd(c, data, data, counting, {}, nullptr, &resume).gradients, 80u);
}

}  // namespace
}  // namespace ptrain
