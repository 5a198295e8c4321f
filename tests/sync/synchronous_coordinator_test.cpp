// SynchronousCoordinator, shard 0's schedule for ps-sync (backup 0: every
// worker steps through every version in lockstep) and ps-backup (backup b:
// the first W - b claims for the open version make it, the rest are dropped).
// Driven directly, as the shard drives it: begin / claim calls in a scripted
// or seeded order.
#include "sync/synchronous_coordinator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace ptrain {
namespace {

// A go (take a step from `version`), or a stop (epoch over, `received` pushes by then).
PsDecision go(uint64_t version) {
  PsDecision d;
  d.go = 1;
  d.version = version;
  return d;
}
PsDecision stop(uint64_t received) {
  PsDecision d;
  d.received = received;
  return d;
}

::testing::AssertionResult same(const std::optional<PsDecision>& got, const PsDecision& want) {
  if (!got) return ::testing::AssertionFailure() << "held (nullopt)";
  // Without a time limit, no stop says that the run is over.
  if (got->go != want.go || (want.go && got->version != want.version) ||
      (!want.go && got->received != want.received) || got->over != 0)
    return ::testing::AssertionFailure()
           << "got go=" << got->go << " version=" << got->version << " received=" << got->received
           << " over=" << got->over << ", want go=" << want.go << " version=" << want.version
           << " received=" << want.received;
  return ::testing::AssertionSuccess();
}

uint64_t dropped_late(const SynchronousCoordinator& c) {
  ServerStats stats;
  c.add_stats(stats);
  return stats.dropped_late;
}

TEST(SynchronousCoordinator, PsSyncGivesEveryWorkerEachVersionThenStopsInAnyOrder) {
  // W = 3, two steps an epoch, four in all: two epochs. Each worker's answers, in order.
  const std::vector<PsDecision> script = {go(0), go(1), stop(6), go(2), go(3), stop(12)};
  for (uint32_t seed = 0; seed < 30; ++seed) {
    SynchronousCoordinator c(3, 0, 2, 4);
    std::mt19937 rng(seed);
    std::vector<size_t> at(3, 0);  // the next answer each worker expects
    while (*std::min_element(at.begin(), at.end()) < script.size()) {
      const int w = static_cast<int>(rng() % 3);
      const auto got = c.begin(w);
      size_t& i = at[static_cast<size_t>(w)];
      const bool all_heard_stop = std::all_of(at.begin(), at.end(), [](size_t a) { return a >= 3; });
      if (i == 3 && !all_heard_stop) {
        // Epoch 1 is over for this worker; it stays over until everyone has heard so.
        ASSERT_TRUE(same(got, stop(6))) << "seed " << seed << ", worker " << w;
      } else if (i >= script.size()) {
        ASSERT_TRUE(same(got, stop(12))) << "seed " << seed << ", worker " << w << " after the last epoch";
      } else {
        ASSERT_TRUE(same(got, script[i])) << "seed " << seed << ", worker " << w << ", answer " << i;
        ++i;
      }
    }
    // The run is over: every further begin says so.
    for (int w = 0; w < 3; ++w) EXPECT_TRUE(same(c.begin(w), stop(12)));
  }
}

TEST(SynchronousCoordinator, PsSyncWorkerByWorkerOrderGivesTheSameVersions) {
  // One worker takes its whole epoch before the next begins: lockstep is the pulls' job.
  SynchronousCoordinator c(3, 0, 2, 4);
  for (int w = 0; w < 3; ++w) {
    EXPECT_TRUE(same(c.begin(w), go(0)));
    EXPECT_TRUE(same(c.begin(w), go(1)));
    EXPECT_TRUE(same(c.begin(w), stop(6)));
  }
  for (int w : {2, 0, 1}) {
    EXPECT_TRUE(same(c.begin(w), go(2)));
    EXPECT_TRUE(same(c.begin(w), go(3)));
    EXPECT_TRUE(same(c.begin(w), stop(12)));
  }
  EXPECT_EQ(dropped_late(c), 0u);
}

TEST(SynchronousCoordinator, PsSyncTotalStepsCutsTheLastEpoch) {
  // W = 2, three steps an epoch, four in all: epochs of 3 and 1 steps.
  SynchronousCoordinator c(2, 0, 3, 4);
  for (int w = 0; w < 2; ++w) {
    for (uint64_t v = 0; v < 3; ++v) EXPECT_TRUE(same(c.begin(w), go(v)));
    EXPECT_TRUE(same(c.begin(w), stop(6)));
  }
  for (int w = 0; w < 2; ++w) {
    EXPECT_TRUE(same(c.begin(w), go(3)));
    EXPECT_TRUE(same(c.begin(w), stop(8)));
  }
  for (int w = 0; w < 2; ++w) EXPECT_TRUE(same(c.begin(w), stop(8)));
  // Fewer steps than an epoch: one short epoch.
  SynchronousCoordinator short_run(2, 0, 10, 1);
  for (int w = 0; w < 2; ++w) {
    EXPECT_TRUE(same(short_run.begin(w), go(0)));
    EXPECT_TRUE(same(short_run.begin(w), stop(2)));
  }
}

TEST(SynchronousCoordinator, PsBackupDropsExactlyTheLateGradients) {
  // W = 4, b = 1: every arrival order accepts the first three claims and drops the fourth.
  std::vector<int> order = {0, 1, 2, 3};
  do {
    SynchronousCoordinator c(4, 1, 10, 10);
    for (int w = 0; w < 4; ++w) ASSERT_TRUE(same(c.begin(w), go(0)));
    for (size_t i = 0; i < 4; ++i)
      EXPECT_EQ(c.claim(order[i], 0), i < 3) << "claim " << i << " (worker " << order[i] << ")";
    EXPECT_EQ(dropped_late(c), 1u);
  } while (std::next_permutation(order.begin(), order.end()));

  // The scripted order [2, 0, 3, 1], then more claims for versions already closed.
  SynchronousCoordinator c(4, 1, 10, 10);
  for (int w = 0; w < 4; ++w) ASSERT_TRUE(same(c.begin(w), go(0)));
  EXPECT_TRUE(c.claim(2, 0));
  EXPECT_TRUE(c.claim(0, 0));
  EXPECT_TRUE(c.claim(3, 0));
  EXPECT_FALSE(c.claim(1, 0));
  EXPECT_EQ(dropped_late(c), 1u);
  for (int w : {2, 0, 3, 1}) ASSERT_TRUE(same(c.begin(w), go(1)));
  EXPECT_TRUE(c.claim(1, 1));
  EXPECT_FALSE(c.claim(3, 0));  // a gradient from an old version
  EXPECT_EQ(dropped_late(c), 2u);
  EXPECT_TRUE(c.claim(3, 1));
  EXPECT_TRUE(c.claim(0, 1));
  EXPECT_FALSE(c.claim(2, 1));
  EXPECT_EQ(dropped_late(c), 3u);
}

TEST(SynchronousCoordinator, PsBackupHoldsAnAcceptedWorkerUntilItsVersionCloses) {
  SynchronousCoordinator c(4, 1, 10, 10);
  for (int w = 0; w < 4; ++w) ASSERT_TRUE(same(c.begin(w), go(0)));
  EXPECT_TRUE(c.claim(0, 0));
  EXPECT_FALSE(c.begin(0)) << "version 0 has 1 of 3 gradients";
  EXPECT_TRUE(c.claim(1, 0));
  EXPECT_FALSE(c.begin(0));
  EXPECT_FALSE(c.begin(1));
  // A worker with no gradient in version 0 may begin (again) at once: version 0 is still the newest.
  EXPECT_TRUE(same(c.begin(2), go(0)));
  EXPECT_TRUE(c.claim(2, 0));  // the third: version 0 closes
  for (int w : {0, 1, 2}) EXPECT_TRUE(same(c.begin(w), go(1))) << "worker " << w;
  // Worker 3 was late: its claim is dropped and it goes on with the newest version at once.
  EXPECT_FALSE(c.claim(3, 0));
  EXPECT_TRUE(same(c.begin(3), go(1)));
  // Held again for version 1 until it closes, whichever workers close it.
  EXPECT_TRUE(c.claim(3, 1));
  EXPECT_FALSE(c.begin(3));
  EXPECT_TRUE(c.claim(1, 1));
  EXPECT_FALSE(c.begin(3));
  EXPECT_FALSE(c.begin(1));
  EXPECT_TRUE(c.claim(0, 1));
  EXPECT_TRUE(same(c.begin(3), go(2)));
  EXPECT_TRUE(same(c.begin(1), go(2)));
  EXPECT_EQ(dropped_late(c), 1u);
}

TEST(SynchronousCoordinator, PsBackupEpochEndsWhenItsVersionsCloseAndDropsLaterClaims) {
  // W = 3, b = 1: two gradients a version; two versions an epoch, five in all.
  SynchronousCoordinator c(3, 1, 2, 5);
  uint64_t expected_drops = 0, accepted = 0;
  auto run_version = [&](uint64_t v) {
    for (int w = 0; w < 3; ++w) ASSERT_TRUE(same(c.begin(w), go(v))) << "version " << v << ", worker " << w;
    EXPECT_TRUE(c.claim(static_cast<int>(v % 3), v));
    EXPECT_TRUE(c.claim(static_cast<int>((v + 1) % 3), v));
    accepted += 2;
    EXPECT_FALSE(c.claim(static_cast<int>((v + 2) % 3), v));
    ++expected_drops;
  };
  auto end_epoch = [&](uint64_t received) {
    for (int w = 0; w < 3; ++w) EXPECT_TRUE(same(c.begin(w), stop(received))) << "worker " << w;
  };
  run_version(0);
  run_version(1);
  EXPECT_EQ(accepted, 4u);
  // Version 2 belongs to the next epoch: a claim for it now is dropped, as are old ones.
  EXPECT_FALSE(c.claim(0, 2));
  EXPECT_FALSE(c.claim(1, 1));
  expected_drops += 2;
  EXPECT_TRUE(same(c.begin(0), stop(4)));
  EXPECT_TRUE(same(c.begin(0), stop(4))) << "asked again before everyone heard the epoch end";
  EXPECT_FALSE(c.claim(1, 2));
  ++expected_drops;
  end_epoch(4);
  run_version(2);
  run_version(3);
  end_epoch(8);
  run_version(4);  // the last epoch has one version: total 5
  end_epoch(10);
  end_epoch(10);  // and nothing after it
  EXPECT_EQ(dropped_late(c), expected_drops);
}

TEST(SynchronousCoordinator, PsBackupWorkerHeldOnTheEpochsLastVersionHearsStop) {
  SynchronousCoordinator c(3, 1, 1, 1);
  for (int w = 0; w < 3; ++w) ASSERT_TRUE(same(c.begin(w), go(0)));
  EXPECT_TRUE(c.claim(1, 0));
  EXPECT_FALSE(c.begin(1));
  EXPECT_TRUE(c.claim(2, 0));
  EXPECT_TRUE(same(c.begin(1), stop(2)));
  EXPECT_TRUE(same(c.begin(2), stop(2)));
  EXPECT_FALSE(c.claim(0, 0));
  EXPECT_TRUE(same(c.begin(0), stop(2)));
}

TEST(SynchronousCoordinator, PsBackupTotalStepsShorterThanAnEpoch) {
  SynchronousCoordinator c(2, 1, 10, 2);  // one gradient a version
  for (uint64_t v = 0; v < 2; ++v) {
    ASSERT_TRUE(same(c.begin(0), go(v)));
    ASSERT_TRUE(same(c.begin(1), go(v)));
    EXPECT_TRUE(c.claim(1, v));
    EXPECT_FALSE(c.claim(0, v));
  }
  EXPECT_TRUE(same(c.begin(0), stop(2)));
  EXPECT_TRUE(same(c.begin(1), stop(2)));
  EXPECT_TRUE(same(c.begin(1), stop(2)));
  EXPECT_FALSE(c.claim(0, 2));
}

// Seeded schedules of W workers that begin, compute and claim in random order.
// The test keeps its own count of the versions, and checks every answer.
TEST(SynchronousCoordinator, PsBackupRandomSchedulesCloseEveryVersionWithExactlyWMinusBGradients) {
  enum class State { Idle, Computing, Held, Stopped };
  for (int workers : {2, 3, 5})
    for (int backup = 1; backup < workers; ++backup)
      for (uint32_t seed = 0; seed < 10; ++seed) {
        const size_t steps_per_epoch = 3, total_steps = 7;
        const auto need = static_cast<uint64_t>(workers - backup);
        SynchronousCoordinator c(workers, backup, steps_per_epoch, total_steps);
        std::mt19937 rng(seed);
        std::vector<State> state(static_cast<size_t>(workers), State::Idle);
        std::vector<uint64_t> computing_on(static_cast<size_t>(workers), 0);
        std::vector<int64_t> accepted_for(static_cast<size_t>(workers), -1);
        std::vector<uint64_t> per_version(total_steps, 0);
        uint64_t closed = 0, accepted = 0, rejected = 0, epoch_target = steps_per_epoch;
        const std::string where =
            "W=" + std::to_string(workers) + " b=" + std::to_string(backup) + " seed " + std::to_string(seed);
        for (int tick = 0; closed < total_steps || std::any_of(state.begin(), state.end(),
                                                               [](State s) { return s != State::Stopped; });
             ++tick) {
          ASSERT_LT(tick, 100000) << where << ": no end";
          if (std::all_of(state.begin(), state.end(), [](State s) { return s == State::Stopped; })) {
            if (closed >= total_steps) break;
            state.assign(state.size(), State::Idle);  // the next epoch
            epoch_target = std::min<uint64_t>(epoch_target + steps_per_epoch, total_steps);
          }
          const auto w = static_cast<size_t>(rng() % static_cast<uint32_t>(workers));
          if (state[w] == State::Stopped) continue;
          if (state[w] == State::Computing) {
            const bool ok = c.claim(static_cast<int>(w), computing_on[w]);
            const bool should = computing_on[w] == closed && closed < epoch_target;
            ASSERT_EQ(ok, should) << where << ": worker " << w << " claims version " << computing_on[w]
                                  << " with " << closed << " closed";
            if (ok) {
              accepted_for[w] = static_cast<int64_t>(closed);
              ++accepted;
              if (++per_version[closed] == need) ++closed;
            } else {
              ++rejected;
            }
            state[w] = State::Idle;
            continue;
          }
          const auto got = c.begin(static_cast<int>(w));
          const bool must_wait = accepted_for[w] >= static_cast<int64_t>(closed);
          if (must_wait) {
            ASSERT_FALSE(got) << where << ": worker " << w << " began before its version " << accepted_for[w]
                              << " closed";
            state[w] = State::Held;
          } else if (closed >= epoch_target) {
            ASSERT_TRUE(same(got, stop(accepted))) << where << ": worker " << w;
            state[w] = State::Stopped;
          } else {
            ASSERT_TRUE(same(got, go(closed))) << where << ": worker " << w;
            computing_on[w] = closed;
            state[w] = State::Computing;
          }
        }
        for (uint64_t v = 0; v < total_steps; ++v)
          EXPECT_EQ(per_version[v], need) << where << ", version " << v;
        EXPECT_EQ(dropped_late(c), rejected) << where;
      }
}

}  // namespace
}  // namespace ptrain
