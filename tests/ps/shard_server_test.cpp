// ShardServer over a LocalGroup: shards serve on their own threads while the
// test acts as the workers, with PsClient or with raw protocol messages. SGD
// (no momentum, no decay) with small integers makes every update exact.
#include "ps/shard_server.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>

#include "comm/local_group.hpp"
#include "core/error.hpp"
#include "core/flat_layout.hpp"
#include "ps/ps_client.hpp"
#include "sync/bounded_staleness_coordinator.hpp"
#include "sync/stale_policy.hpp"
#include "sync/synchronous_coordinator.hpp"

namespace ptrain {
namespace {

// Long enough never to fire in a passing test; short enough that a failing one ends.
constexpr auto kGroupTimeout = std::chrono::seconds(20);

ShardConfig sgd_shard(const std::string& strategy, int workers, ShardRange range, float lr, bool aggregated,
                      size_t gradients_per_update = 1, int shard = 0) {
  ShardConfig c;
  c.strategy = strategy;
  c.shard = shard;
  c.workers = workers;
  c.range = range;
  c.optimizer.kind = OptimizerKind::Sgd;
  c.optimizer.lr = lr;
  c.codec_range = CodecRange{range.size(), {}};
  c.aggregated = aggregated;
  c.gradients_per_update = gradients_per_update;
  return c;
}

struct Served {
  std::vector<std::string> shard_errors;  // per shard: "" when serve() returned
  std::string driver_error;
};

// Serves each shard on its own thread (shard s on rank workers + s of a group of
// `size`) while `drive` acts as the workers on this one. Then aborts the group,
// so that nothing is left waiting, and joins the shards. A shard that throws
// aborts the group with its message, which wakes a driver waiting for it.
Served serve_and_drive(int size, std::vector<ShardConfig> configs,
                       std::unique_ptr<StepCoordinator> coordinator,
                       const std::function<void(const std::shared_ptr<LocalGroup>&)>& drive) {
  auto group = std::make_shared<LocalGroup>(size, kGroupTimeout);
  Served served;
  served.shard_errors.resize(configs.size());
  std::vector<std::thread> shards;
  for (size_t s = 0; s < configs.size(); ++s)
    shards.emplace_back([&, s, coord = s == 0 ? std::move(coordinator) : nullptr]() mutable {
      try {
        LocalCommunicator comm(group, configs[s].workers + static_cast<int>(s));
        ShardServer(comm, configs[s], std::move(coord)).serve();
      } catch (const Error& e) {
        served.shard_errors[s] = e.what();
        group->abort(e.what());
      } catch (const std::exception& e) {  // the shard's errors are all meant to be ptrain::Error
        served.shard_errors[s] = std::string("not a ptrain::Error: ") + e.what();
        group->abort(e.what());
      }
    });
  try {
    drive(group);
  } catch (const std::exception& e) {
    served.driver_error = e.what();
  }
  group->abort("the test is over");
  for (auto& t : shards) t.join();
  return served;
}

// Runs body(w, comm) for workers 0..workers-1, each on its own thread.
void run_workers(const std::shared_ptr<LocalGroup>& group, int workers,
                 const std::function<void(int, LocalCommunicator&)>& body) {
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      try {
        LocalCommunicator comm(group, w);
        body(w, comm);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "worker " << w << ": " << e.what();
        group->abort(e.what());
      }
    });
  for (auto& t : threads) t.join();
}

void send_request(LocalCommunicator& comm, int to, PsRequestKind kind, uint64_t version = 0,
                  uint64_t received = 0, std::span<const float> payload = {}) {
  const PsRequest request{kind, static_cast<uint32_t>(comm.rank()), version, received};
  comm.send(to, kTagPsRequest, ps_message(request, std::as_bytes(payload)));
}

struct Params {
  uint64_t version = 0;
  std::vector<float> values;
};

Params receive_params(LocalCommunicator& comm, int shard_rank, size_t count) {
  std::vector<std::byte> reply(sizeof(PsParamsHeader) + count * sizeof(float));
  comm.recv(shard_rank, kTagPsReply, reply);
  Params p;
  p.version = ps_header<PsParamsHeader>(reply, "parameters").version;
  p.values.resize(count);
  std::memcpy(p.values.data(), reply.data() + sizeof(PsParamsHeader), count * sizeof(float));
  return p;
}

Params pull(LocalCommunicator& comm, int shard_rank, size_t count, uint64_t min_version,
            uint64_t min_received = 0) {
  send_request(comm, shard_rank, PsRequestKind::Pull, min_version, min_received);
  return receive_params(comm, shard_rank, count);
}

PsDecision receive_decision(LocalCommunicator& comm, int shard_rank) {
  PsDecision d;
  comm.recv(shard_rank, kTagPsReply, std::as_writable_bytes(std::span<PsDecision>(&d, 1)));
  return d;
}

ServerStats finish(LocalCommunicator& comm, int shard_rank) {
  send_request(comm, shard_rank, PsRequestKind::Finish);
  auto reply = comm.recv_any(kTagPsReply, kGroupTimeout);
  if (!reply) throw Error("no statistics from the shard");
  EXPECT_EQ(reply->from, shard_rank);
  return ServerStats::deserialize(reply->bytes);
}

// Blocks until the shard replies to this worker, which it never does in the
// malformed-input tests: the shard's error ends the wait instead.
void wait_for_reply(LocalCommunicator& comm, int shard_rank) {
  std::vector<std::byte> reply(1);
  comm.recv(shard_rank, kTagPsReply, reply);
}

TEST(ShardServer, AggregatedUpdateStepsWithTheMeanOfTheWorkersGradients) {
  // ps-sync, W = 2, two shards over five parameters, lr = 0.5.
  constexpr int kWorkers = 2;
  const auto ranges = shard_ranges(5, 2);
  FlatLayout layout;
  layout.add("w", {5});
  const std::vector<float> initial = {1, 2, 3, 4, 5};
  const std::vector<std::vector<float>> step1 = {{1, -2, 3, 0.5f, 8}, {3, 2, -1, 1.5f, 0}};  // mean 2 0 1 1 4
  const std::vector<std::vector<float>> step2 = {{2, 2, 2, 2, 2}, {0, 4, -2, 6, 2}};         // mean 1 3 0 4 2
  const std::vector<float> after1 = {0, 2, 2.5f, 3.5f, 3};
  const std::vector<float> after2 = {-0.5f, 0.5f, 2.5f, 1.5f, 2};
  std::vector<ServerStats> stats;
  std::vector<std::byte> pull2_reply[2];
  std::vector<ShardConfig> configs;
  for (int s = 0; s < 2; ++s)
    configs.push_back(
        sgd_shard("ps-sync", kWorkers, ranges[static_cast<size_t>(s)], 0.5f, true, kWorkers, s));

  const auto served = serve_and_drive(4, configs, nullptr, [&](const auto& group) {
    run_workers(group, kWorkers, [&](int w, LocalCommunicator& comm) {
      PsClient client(comm, kWorkers, ranges, CodecConfig{}, PullCodecChoice{}, layout, "ps-sync", kGroupTimeout);
      if (w == 0) client.init(initial);
      std::vector<float> params(5, -1);
      client.pull(params, 0, 0);  // worker 1's pull may come first: the shards hold it until Init
      EXPECT_EQ(params, initial) << "worker " << w;
      client.push(step1[static_cast<size_t>(w)], StepInfo{});
      client.pull(params, 1, 0);
      EXPECT_EQ(params, after1) << "worker " << w;
      for (size_t s = 0; s < 2; ++s) EXPECT_EQ(client.pulled_version(s), 1u) << "worker " << w;
      if (w == 1) {
        client.push(step2[1], StepInfo{});
        return;
      }
      // Worker 0 asks for version 2 before it pushes its own gradient for it: the
      // shards must hold the pull until the update that gradient completes.
      for (int s = 0; s < 2; ++s) send_request(comm, kWorkers + s, PsRequestKind::Pull, 2);
      client.push(step2[0], StepInfo{});
      for (int s = 0; s < 2; ++s) {
        const auto got = receive_params(comm, kWorkers + s, ranges[static_cast<size_t>(s)].size());
        EXPECT_EQ(got.version, 2u) << "shard " << s;
        for (size_t i = 0; i < got.values.size(); ++i)
          EXPECT_EQ(got.values[i], after2[ranges[static_cast<size_t>(s)].begin + i])
              << "shard " << s << ", " << i;
      }
      stats = client.finish();
    });
  });
  EXPECT_EQ(served.driver_error, "");
  for (const auto& e : served.shard_errors) EXPECT_EQ(e, "");
  ASSERT_EQ(stats.size(), 2u);
  for (const auto& s : stats) {
    EXPECT_EQ(s.updates, 2u);
    EXPECT_EQ(s.staleness.bins, (std::vector<uint64_t>{4}));  // 2 gradients in each of 2 updates, all fresh
    EXPECT_EQ(s.applied(), 4u);
    EXPECT_EQ(s.dropped_late + s.dropped_stale, 0u);
  }
}

// One by one (ssp, async): W = 2, one shard, lr = 1; the gradients and their
// version tags are scripted, so the staleness of each is known. Returns the
// parameters after all of them, and the shard's statistics.
void run_stale_script(const std::string& policy, const std::vector<std::pair<int, uint64_t>>& pushes,
                      const std::vector<std::vector<float>>& gradients, uint64_t final_version,
                      std::vector<float>& params, ServerStats& stats) {
  const std::vector<float> initial = {100, -100};
  ShardConfig config = sgd_shard("async", 2, {0, 2}, 1.0f, false);
  config.staleness_rule = staleness_rule(parse_stale_policy(policy));
  const auto served = serve_and_drive(3, {config}, nullptr, [&](const auto& group) {
    // One thread posts as both workers: the shard sees the messages in this order.
    LocalCommunicator w0(group, 0), w1(group, 1);
    LocalCommunicator* worker[2] = {&w0, &w1};
    send_request(w0, 2, PsRequestKind::Init, 0, 0, initial);
    for (size_t i = 0; i < pushes.size(); ++i)
      send_request(*worker[pushes[i].first], 2, PsRequestKind::Push, pushes[i].second, 0, gradients[i]);
    // Once every push is in (dropped ones count as received too).
    const auto got = pull(w1, 2, 2, 0, pushes.size());
    EXPECT_EQ(got.version, final_version) << policy;
    params = got.values;
    stats = finish(w0, 2);
  });
  EXPECT_EQ(served.driver_error, "") << policy;
  EXPECT_EQ(served.shard_errors[0], "") << policy;
}

TEST(ShardServer, OneByOneDropPolicyDropsStaleGradientsAndLeavesTheParameters) {
  // drop:0: worker 1's first gradient was computed from version 0 but arrives at version 1.
  std::vector<float> params;
  ServerStats stats;
  run_stale_script("drop:0", {{0, 0}, {1, 0}, {1, 1}}, {{1, 2}, {50, 50}, {-1, 3}}, 2, params, stats);
  EXPECT_EQ(params, (std::vector<float>{100, -105}));  // the dropped {50, 50} left no trace
  EXPECT_EQ(stats.dropped_stale, 1u);
  EXPECT_EQ(stats.updates, 2u);
  EXPECT_EQ(stats.staleness.bins, (std::vector<uint64_t>{2}));
  EXPECT_EQ(stats.applied(), 2u);
}

// Six pushes; tags make staleness 0, 0, 0, 3, 1, 0.
const std::vector<std::pair<int, uint64_t>> kStalePushes = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 3}, {0, 5}};
const std::vector<std::vector<float>> kStaleGradients = {{1, 1}, {2, 0}, {0, 2}, {8, -4}, {2, 6}, {1, 1}};

TEST(ShardServer, OneByOneScalePolicyDividesTheStepByOnePlusStaleness) {
  std::vector<float> params;
  ServerStats stats;
  run_stale_script("scale", kStalePushes, kStaleGradients, 6, params, stats);
  // 100 - 1 - 2 - 0 - 8/4 - 2/2 - 1, and -100 - 1 - 0 - 2 + 4/4 - 6/2 - 1; the last
  // push, fresh again, takes a full step (the scaled rate does not stick).
  EXPECT_EQ(params, (std::vector<float>{93, -106}));
  EXPECT_EQ(stats.staleness.bins, (std::vector<uint64_t>{4, 1, 0, 1}));
  EXPECT_EQ(stats.updates, 6u);
  EXPECT_EQ(stats.applied(), 6u);
  EXPECT_EQ(stats.dropped_stale, 0u);
  EXPECT_EQ(stats.max_staleness(), 3u);
}

TEST(ShardServer, OneByOneWithoutPolicyAppliesStaleGradientsInFull) {
  std::vector<float> params;
  ServerStats stats;
  run_stale_script("none", kStalePushes, kStaleGradients, 6, params, stats);
  EXPECT_EQ(params, (std::vector<float>{86, -106}));
  EXPECT_EQ(stats.staleness.bins, (std::vector<uint64_t>{4, 1, 0, 1}));
  EXPECT_EQ(stats.applied(), stats.updates);
}

TEST(ShardServer, PsBackupAppliesTheAcceptedGradientsOnly) {
  // W = 3, b = 1: shard 0 coordinates; worker 1's claim comes third and is dropped.
  auto coordinator = std::make_unique<SynchronousCoordinator>(3, 1, 5, 5);
  const auto served = serve_and_drive(
      4, {sgd_shard("ps-backup", 3, {0, 2}, 1.0f, true, 2)}, std::move(coordinator), [&](const auto& group) {
        LocalCommunicator w0(group, 0), w1(group, 1), w2(group, 2);
        send_request(w0, 3, PsRequestKind::Init, 0, 0, std::vector<float>{10, 10});
        for (auto* w : {&w0, &w1, &w2}) {
          send_request(*w, 3, PsRequestKind::Begin);
          const auto d = receive_decision(*w, 3);
          EXPECT_EQ(d.go, 1u);
          EXPECT_EQ(d.version, 0u);
        }
        for (auto* w : {&w2, &w0, &w1}) send_request(*w, 3, PsRequestKind::Claim, 0);
        EXPECT_EQ(receive_decision(w2, 3).go, 1u);
        EXPECT_EQ(receive_decision(w0, 3).go, 1u);
        EXPECT_EQ(receive_decision(w1, 3).go, 0u);
        send_request(w2, 3, PsRequestKind::Push, 0, 0, std::vector<float>{4, 2});
        send_request(w0, 3, PsRequestKind::Push, 0, 0, std::vector<float>{2, 0});
        // Worker 1 was late: it may begin the next version at once.
        send_request(w1, 3, PsRequestKind::Begin);
        const auto d = receive_decision(w1, 3);
        EXPECT_EQ(d.go, 1u);
        EXPECT_EQ(d.version, 1u);
        const auto got = pull(w1, 3, 2, 1);
        EXPECT_EQ(got.version, 1u);
        EXPECT_EQ(got.values, (std::vector<float>{7, 9}));  // 10 - mean({4, 2}, {2, 0})
        const auto stats = finish(w0, 3);
        EXPECT_EQ(stats.updates, 1u);
        EXPECT_EQ(stats.dropped_late, 1u);
        EXPECT_EQ(stats.staleness.bins, (std::vector<uint64_t>{2}));
      });
  EXPECT_EQ(served.driver_error, "");
  EXPECT_EQ(served.shard_errors[0], "");
}

TEST(ShardServer, HeldBeginIsAnsweredWhenAPushReleasesIt) {
  // async with --warmup-single 1: worker 1 waits for worker 0's first gradient.
  auto coordinator = std::make_unique<BoundedStalenessCoordinator>(2, 5, 5, std::nullopt, 1);
  const auto served = serve_and_drive(3, {sgd_shard("async", 2, {0, 1}, 1.0f, false)}, std::move(coordinator),
                                      [&](const auto& group) {
                                        LocalCommunicator w0(group, 0), w1(group, 1);
                                        send_request(w0, 2, PsRequestKind::Init, 0, 0, std::vector<float>{1});
                                        send_request(w1, 2, PsRequestKind::Begin);
                                        send_request(w0, 2, PsRequestKind::Begin);
                                        EXPECT_EQ(receive_decision(w0, 2).go, 1u);
                                        // The shard handled worker 1's Begin before worker 0's: had it
                                        // answered, the answer would be here.
                                        EXPECT_FALSE(w1.recv_any(kTagPsReply, std::chrono::milliseconds(0)))
                                            << "worker 1 began during the warm-up";
                                        send_request(w0, 2, PsRequestKind::Push, 0, 0, std::vector<float>{1});
                                        EXPECT_EQ(receive_decision(w1, 2).go, 1u);
                                        finish(w0, 2);
                                      });
  EXPECT_EQ(served.driver_error, "");
  EXPECT_EQ(served.shard_errors[0], "");
}

TEST(ShardServer, LeaveCountsItsUnpushedTicketAndIsReported) {
  const auto served =
      serve_and_drive(3, {sgd_shard("async", 2, {0, 1}, 1.0f, false)}, nullptr, [&](const auto& group) {
        LocalCommunicator w0(group, 0), w1(group, 1);
        send_request(w0, 2, PsRequestKind::Init, 0, 0, std::vector<float>{1});
        send_request(w0, 2, PsRequestKind::Push, 0, 0, std::vector<float>{1});
        send_request(w1, 2, PsRequestKind::Leave, 0, 1);
        // One push and one ticket that never will be: the pull for two is answered.
        const auto got = pull(w0, 2, 1, 0, 2);
        EXPECT_EQ(got.version, 1u);
        EXPECT_EQ(got.values, (std::vector<float>{0}));
        const auto stats = finish(w0, 2);
        EXPECT_EQ(stats.left_workers, (std::vector<uint32_t>{1}));
        EXPECT_EQ(stats.applied(), 1u);
      });
  EXPECT_EQ(served.driver_error, "");
  EXPECT_EQ(served.shard_errors[0], "");
}

TEST(ShardServer, HalfCollectedUpdateTimesOutNamingTheMissingWorkers) {
  // W = 2: worker 0 pushes, worker 1 never does.
  ShardConfig config = sgd_shard("ps-sync", 2, {0, 2}, 1.0f, true, 2);
  config.timeout = std::chrono::milliseconds(200);
  auto served = serve_and_drive(3, {config}, nullptr, [&](const auto& group) {
    LocalCommunicator w0(group, 0);
    send_request(w0, 2, PsRequestKind::Init, 0, 0, std::vector<float>{1, 1});
    send_request(w0, 2, PsRequestKind::Push, 0, 0, std::vector<float>{1, 1});
    pull(w0, 2, 2, 1);  // never answered: the shard's timeout ends it
  });
  EXPECT_NE(served.shard_errors[0].find("timed out"), std::string::npos) << served.shard_errors[0];
  EXPECT_NE(served.shard_errors[0].find("1 of 2 in; none yet from worker(s) 1)"), std::string::npos)
      << served.shard_errors[0];
  EXPECT_EQ(served.driver_error, served.shard_errors[0]);  // the waiting worker heard why

  // W = 3: only worker 1 pushed; 0 and 2 are named.
  config = sgd_shard("ps-sync", 3, {0, 2}, 1.0f, true, 3);
  config.timeout = std::chrono::milliseconds(200);
  served = serve_and_drive(4, {config}, nullptr, [&](const auto& group) {
    LocalCommunicator w0(group, 0), w1(group, 1);
    send_request(w0, 3, PsRequestKind::Init, 0, 0, std::vector<float>{1, 1});
    send_request(w1, 3, PsRequestKind::Push, 0, 0, std::vector<float>{1, 1});
    pull(w1, 3, 2, 1);
  });
  EXPECT_NE(served.shard_errors[0].find("timed out"), std::string::npos) << served.shard_errors[0];
  EXPECT_NE(served.shard_errors[0].find("1 of 3 in; none yet from worker(s) 0, 2)"), std::string::npos)
      << served.shard_errors[0];
}

TEST(ShardServer, IdleShardDoesNotTimeOut) {
  // Nothing half-collected: waiting longer than the timeout (workers evaluating) is normal.
  // (One gradient an update, so that no update is ever half-collected while the test waits.)
  ShardConfig config = sgd_shard("ps-sync", 1, {0, 1}, 1.0f, true, 1);
  config.timeout = std::chrono::milliseconds(20);
  const auto served = serve_and_drive(2, {config}, nullptr, [&](const auto& group) {
    LocalCommunicator w0(group, 0);
    send_request(w0, 1, PsRequestKind::Init, 0, 0, std::vector<float>{3});
    send_request(w0, 1, PsRequestKind::Pull, 1);  // held, with nothing collected
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    send_request(w0, 1, PsRequestKind::Push, 0, 0, std::vector<float>{2});
    const auto got = receive_params(w0, 1, 1);
    EXPECT_EQ(got.version, 1u);
    EXPECT_EQ(got.values, (std::vector<float>{1}));
    finish(w0, 1);
  });
  EXPECT_EQ(served.driver_error, "");
  EXPECT_EQ(served.shard_errors[0], "");
}

TEST(ShardServer, PullWaitsForTheReceivedPushesDroppedOnesIncluded) {
  // drop:0, one by one. Worker 1 asks for the parameters once 3 pushes are in,
  // before any is: the answer must come after the third (dropped) push and
  // before the fourth, so it carries version 2.
  ShardConfig config = sgd_shard("async", 2, {0, 1}, 1.0f, false);
  config.staleness_rule = staleness_rule(parse_stale_policy("drop:0"));
  const auto served = serve_and_drive(3, {config}, nullptr, [&](const auto& group) {
    LocalCommunicator w0(group, 0), w1(group, 1);
    send_request(w0, 2, PsRequestKind::Init, 0, 0, std::vector<float>{10});
    send_request(w1, 2, PsRequestKind::Pull, 0, 3);
    send_request(w0, 2, PsRequestKind::Push, 0, 0, std::vector<float>{1});  // version 1
    send_request(w0, 2, PsRequestKind::Push, 1, 0, std::vector<float>{2});  // version 2
    send_request(w0, 2, PsRequestKind::Push, 0, 0, std::vector<float>{4});  // staleness 2: dropped
    send_request(w0, 2, PsRequestKind::Push, 2, 0, std::vector<float>{8});  // version 3
    const auto got = receive_params(w1, 2, 1);
    EXPECT_EQ(got.version, 2u);
    EXPECT_EQ(got.values, (std::vector<float>{7}));
    EXPECT_EQ(pull(w1, 2, 1, 3).values, (std::vector<float>{-1}));
    const auto stats = finish(w0, 2);
    EXPECT_EQ(stats.dropped_stale, 1u);
    EXPECT_EQ(stats.applied(), 3u);
  });
  EXPECT_EQ(served.driver_error, "");
  EXPECT_EQ(served.shard_errors[0], "");
}

// A shard given `send_bad` (as the workers of a group of `size`, shard 0 on rank
// `workers`) must throw ptrain::Error whose message contains `expected`.
void expect_shard_error(int size, const ShardConfig& config,
                        const std::function<void(const std::shared_ptr<LocalGroup>&)>& send_bad,
                        const std::string& expected) {
  const auto served = serve_and_drive(size, {config}, nullptr, send_bad);
  EXPECT_NE(served.shard_errors[0].find(expected), std::string::npos)
      << "expected \"" << expected << "\" in \"" << served.shard_errors[0] << "\"";
}

TEST(ShardServer, MalformedRequestsAreErrorsNamingTheProblem) {
  const ShardConfig sync = sgd_shard("ps-sync", 2, {0, 3}, 1.0f, true, 2);
  const ShardConfig async = sgd_shard("async", 2, {0, 3}, 1.0f, false);
  const std::vector<float> three = {1, 2, 3};
  for (const auto& config : {sync, async})
    expect_shard_error(
        3, config,
        [&](const auto& group) {
          LocalCommunicator w0(group, 0);
          send_request(w0, 2, PsRequestKind::Push, 0, 0, three);
          wait_for_reply(w0, 2);
        },
        config.strategy + ": worker 0 pushed to server shard 0 before it had its initial parameters");
  expect_shard_error(
      3, sync,
      [&](const auto& group) {
        LocalCommunicator w0(group, 0), w1(group, 1);
        send_request(w0, 2, PsRequestKind::Init, 0, 0, three);
        send_request(w1, 2, PsRequestKind::Push, 1, 0, three);
        wait_for_reply(w1, 2);
      },
      "ps-sync: server shard 0 is at update 0 but worker 1 pushed a gradient for update 1");
  expect_shard_error(
      3, sync,
      [&](const auto& group) {
        LocalCommunicator w0(group, 0);
        send_request(w0, 2, PsRequestKind::Init, 0, 0, three);
        send_request(w0, 2, PsRequestKind::Push, 0, 0, three);
        send_request(w0, 2, PsRequestKind::Push, 0, 0, three);
        wait_for_reply(w0, 2);
      },
      "ps-sync: worker 0 pushed twice to server shard 0 for update 0");
  for (size_t bytes : {size_t{0}, size_t{10}, sizeof(PsRequest) - 1})
    expect_shard_error(
        3, sync,
        [&](const auto& group) {
          LocalCommunicator w1(group, 1);
          w1.send(2, kTagPsRequest, std::vector<std::byte>(bytes, std::byte{1}));
          wait_for_reply(w1, 2);
        },
        "parameter server request: a message of " + std::to_string(bytes) +
            " bytes is shorter than its header (" + std::to_string(sizeof(PsRequest)) + " bytes)");
  for (const auto& config : {sync, async})
    expect_shard_error(
        3, config,
        [&](const auto& group) {
          LocalCommunicator w0(group, 0), w1(group, 1);
          send_request(w0, 2, PsRequestKind::Init, 0, 0, three);
          send_request(w0, 2, PsRequestKind::Push, 0, 0, std::vector<float>{1, 2});
          // Aggregated, the payloads are decoded when the update is complete.
          if (config.aggregated) send_request(w1, 2, PsRequestKind::Push, 0, 0, three);
          wait_for_reply(w0, 2);
        },
        config.strategy + ": worker 0 pushed 8 bytes to server shard 0, which expects 3 floats");
  expect_shard_error(
      3, sync,
      [&](const auto& group) {
        LocalCommunicator w0(group, 0);
        send_request(w0, 2, PsRequestKind::Init, 0, 0, std::vector<float>{1, 2});
        wait_for_reply(w0, 2);
      },
      "ps-sync: server shard 0 holds 3 parameters but worker 0 sent 8 bytes of them");
  expect_shard_error(
      3, sync,
      [&](const auto& group) {
        LocalCommunicator w1(group, 1);
        const PsRequest as_worker_0{PsRequestKind::Pull, 0, 0, 0};
        w1.send(2, kTagPsRequest, ps_message(as_worker_0));
        wait_for_reply(w1, 2);
      },
      "ps-sync: server shard 0: rank 1 sent a request as worker 0");
  expect_shard_error(
      4, sync,  // rank 3 is in the group but neither a worker nor this shard
      [&](const auto& group) {
        LocalCommunicator other(group, 3);
        const PsRequest request{PsRequestKind::Pull, 3, 0, 0};
        other.send(2, kTagPsRequest, ps_message(request));
        wait_for_reply(other, 2);
      },
      "ps-sync: server shard 0 got a request from rank 3, which is not a worker");
  for (auto kind : {PsRequestKind::Begin, PsRequestKind::Claim})
    expect_shard_error(
        3, sync,  // no coordinator
        [&](const auto& group) {
          LocalCommunicator w0(group, 0);
          send_request(w0, 2, kind);
          wait_for_reply(w0, 2);
        },
        kind == PsRequestKind::Begin
            ? "ps-sync: worker 0 asked server shard 0 to begin a step (only shard 0 coordinates)"
            : "ps-sync: worker 0 sent a claim to server shard 0 (only shard 0 coordinates)");
  for (uint32_t kind : {0u, 11u, 99u})
    expect_shard_error(
        3, sync,
        [&](const auto& group) {
          LocalCommunicator w0(group, 0);
          send_request(w0, 2, static_cast<PsRequestKind>(kind));
          wait_for_reply(w0, 2);
        },
        "ps-sync: server shard 0 got a request of unknown kind " + std::to_string(kind) + " from worker 0");
}

TEST(ShardServer, ConstructionChecksTheShardFitsTheGroup) {
  auto group = std::make_shared<LocalGroup>(3, kGroupTimeout);
  LocalCommunicator comm(group, 2);
  auto config = sgd_shard("ps-sync", 2, {0, 1}, 1.0f, true, 2, 1);
  try {
    ShardServer server(comm, config, nullptr);
    FAIL() << "shard 1 of a group of 2 workers + 1";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "ps-sync: shard 1 does not fit a group of 3 with 2 workers");
  }
  config = sgd_shard("ps-backup", 2, {0, 1}, 1.0f, true, 0);
  try {
    ShardServer server(comm, config, nullptr);
    FAIL() << "an update of no gradients";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "ps-backup: an update needs at least one gradient");
  }
}

}  // namespace
}  // namespace ptrain
