// BoundedStalenessCoordinator, shard 0's schedule for ssp and async: tickets
// (W x steps_per_epoch an epoch, to whichever worker asks), ssp's bound on how
// far a worker may run ahead of the slowest, the single-worker warm-up, and
// workers that leave. Driven directly, as the shard drives it.
#include "sync/bounded_staleness_coordinator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

namespace ptrain {
namespace {

bool is_go(const std::optional<PsDecision>& d) { return d && d->go == 1; }

::testing::AssertionResult is_stop(const std::optional<PsDecision>& d, uint64_t received) {
  if (!d) return ::testing::AssertionFailure() << "held (nullopt)";
  if (d->go != 0) return ::testing::AssertionFailure() << "go";
  if (d->over != 0) return ::testing::AssertionFailure() << "the run is over, without a time limit";
  if (d->received != received)
    return ::testing::AssertionFailure() << "stop with received " << d->received << ", want " << received;
  return ::testing::AssertionSuccess();
}

uint64_t max_clock_gap(const BoundedStalenessCoordinator& c) {
  ServerStats stats;
  c.add_stats(stats);
  return stats.max_clock_gap;
}

// The worker's step as the shard sees it: a Begin answered go, then its push.
void step(BoundedStalenessCoordinator& c, int w) {
  ASSERT_TRUE(is_go(c.begin(w))) << "worker " << w;
  c.pushed(w, 0);
}

TEST(BoundedStalenessCoordinator, AnEpochHandsOutWTimesStepsTicketsToWhoeverAsks) {
  // W = 3, two steps an epoch, five in all: epochs of 6, 6 and 3 tickets.
  for (uint32_t seed = 0; seed < 20; ++seed) {
    BoundedStalenessCoordinator c(3, 2, 5, std::nullopt, 0);
    std::mt19937 rng(seed);
    uint64_t issued = 0;
    for (uint64_t epoch_tickets : {6, 6, 3}) {
      std::vector<uint64_t> per_worker(3, 0);
      for (uint64_t t = 0; t < epoch_tickets; ++t) {
        // Unevenly: worker 0 asks most often.
        const int w = rng() % 4 == 0 ? static_cast<int>(1 + rng() % 2) : 0;
        ASSERT_TRUE(is_go(c.begin(w))) << "seed " << seed << ", ticket " << t;
        c.pushed(w, 0);
        ++per_worker[static_cast<size_t>(w)];
      }
      issued += epoch_tickets;
      // The epoch's tickets are out: everyone hears stop, more than once if it asks again.
      std::vector<int> order = {0, 1, 2};
      std::shuffle(order.begin(), order.end(), rng);
      EXPECT_TRUE(is_stop(c.begin(order[0]), issued)) << "seed " << seed;
      EXPECT_TRUE(is_stop(c.begin(order[0]), issued)) << "seed " << seed;
      EXPECT_TRUE(is_stop(c.begin(order[1]), issued)) << "seed " << seed;
      EXPECT_TRUE(is_stop(c.begin(order[2]), issued)) << "seed " << seed;
    }
    // The run's 15 tickets are out: an epoch with none.
    for (int w = 0; w < 3; ++w) EXPECT_TRUE(is_stop(c.begin(w), 15)) << "seed " << seed;
  }
}

TEST(BoundedStalenessCoordinator, TotalStepsShorterThanAnEpochCutsItsTickets) {
  BoundedStalenessCoordinator c(4, 10, 2, std::nullopt, 0);
  for (int t = 0; t < 8; ++t) step(c, t % 2);
  for (int w = 0; w < 4; ++w) EXPECT_TRUE(is_stop(c.begin(w), 8));
  for (int w = 0; w < 4; ++w) EXPECT_TRUE(is_stop(c.begin(w), 8));
}

TEST(BoundedStalenessCoordinator, ReceivedCountsTicketsNotYetPushed) {
  // A stop's `received` is tickets issued: pushes the shards will have by the epoch's end.
  BoundedStalenessCoordinator c(2, 2, 2, std::nullopt, 0);
  for (int t = 0; t < 4; ++t) ASSERT_TRUE(is_go(c.begin(t % 2)));
  EXPECT_TRUE(is_stop(c.begin(0), 4));
  EXPECT_TRUE(is_stop(c.begin(1), 4));
}

// One seeded schedule of W workers under ssp (or async) as the shard would see
// it: an idle worker asks to begin, a worker holding a ticket pushes, a held
// worker asks again. The test keeps its own clock (pushes this epoch) per worker.
struct Schedule {
  int workers;
  size_t steps_per_epoch, total_steps;
  std::optional<uint64_t> staleness;
  uint32_t seed;
  int slow_worker = -1;  // picked with probability 1/slow_odds only
  uint32_t slow_odds = 1;
};

struct ScheduleResult {
  uint64_t tickets = 0, holds = 0, max_gap_seen = 0, coordinator_max_gap = 0;
  int epochs = 0;
};

void run_schedule(const Schedule& s, ScheduleResult& r) {
  enum class State { Idle, Holding, Held, Stopped };
  BoundedStalenessCoordinator c(s.workers, s.steps_per_epoch, s.total_steps, s.staleness, 0);
  const auto n = static_cast<size_t>(s.workers);
  std::mt19937 rng(s.seed);
  std::vector<State> state(n, State::Idle);
  std::vector<uint64_t> clock(n, 0);
  const std::string where = "W=" + std::to_string(s.workers) +
                            " s=" + (s.staleness ? std::to_string(*s.staleness) : std::string("async")) +
                            " seed " + std::to_string(s.seed);
  const uint64_t total_tickets = n * s.total_steps;
  auto pick = [&] {
    for (;;) {
      const auto w = static_cast<size_t>(rng() % n);
      if (static_cast<int>(w) != s.slow_worker || rng() % s.slow_odds == 0) return w;
    }
  };
  // The answer to w's Begin, checked against the test's own clocks.
  auto ask = [&](size_t w) {
    const auto got = c.begin(static_cast<int>(w));
    if (!got) {
      ++r.holds;
      state[w] = State::Held;
      return;
    }
    if (got->go == 0) {
      EXPECT_EQ(got->received, r.tickets) << where;
      state[w] = State::Stopped;
      return;
    }
    uint64_t slowest = clock[w];
    for (size_t j = 0; j < n; ++j)
      if (state[j] != State::Stopped) slowest = std::min(slowest, clock[j]);
    const uint64_t gap = clock[w] - slowest;
    if (s.staleness) {
      EXPECT_LE(gap, *s.staleness) << where << ": worker " << w << " began " << gap << " ahead";
    }
    r.max_gap_seen = std::max(r.max_gap_seen, gap);
    ++r.tickets;
    state[w] = State::Holding;
  };
  for (uint64_t tick = 0;; ++tick) {
    ASSERT_LT(tick, 1000000u) << where << ": no end";
    if (std::all_of(state.begin(), state.end(), [](State x) { return x == State::Stopped; })) {
      if (r.tickets == total_tickets) break;
      ++r.epochs;
      state.assign(n, State::Idle);
      clock.assign(n, 0);
    }
    // No deadlock: when every worker still in the epoch is held, one of them must be let go.
    if (std::all_of(state.begin(), state.end(),
                    [](State x) { return x == State::Held || x == State::Stopped; })) {
      bool moved = false;
      for (size_t w = 0; w < n && !moved; ++w)
        if (state[w] == State::Held) {
          ask(w);
          moved = state[w] != State::Held;
        }
      ASSERT_TRUE(moved) << where << ": every worker still in the epoch is held";
      continue;
    }
    const size_t w = pick();
    switch (state[w]) {
      case State::Idle:
      case State::Held:
        ask(w);
        break;
      case State::Holding:
        c.pushed(static_cast<int>(w), 0);
        ++clock[w];
        state[w] = State::Idle;
        break;
      case State::Stopped:
        break;
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
  ++r.epochs;
  r.coordinator_max_gap = max_clock_gap(c);
  // Beyond the last epoch, nothing more.
  for (size_t w = 0; w < n; ++w) EXPECT_TRUE(is_stop(c.begin(static_cast<int>(w)), total_tickets)) << where;
}

TEST(BoundedStalenessCoordinator, SspRandomSchedulesKeepEveryStarterWithinSOfTheSlowest) {
  for (int workers : {2, 3, 5})
    for (uint64_t s : {0, 1, 3})
      for (uint32_t seed = 0; seed < 8; ++seed) {
        ScheduleResult r;
        run_schedule({workers, 4, 10, s, seed}, r);
        if (HasFatalFailure()) return;
        EXPECT_EQ(r.tickets, static_cast<uint64_t>(workers) * 10);
        EXPECT_EQ(r.epochs, 3);  // 4 + 4 + 2 steps
        EXPECT_LE(r.coordinator_max_gap, s);
        EXPECT_EQ(r.coordinator_max_gap, r.max_gap_seen) << "W=" << workers << " s=" << s << " seed " << seed;
      }
}

TEST(BoundedStalenessCoordinator, SspBoundIsReachedWithASlowWorkerAndNeverPassed) {
  // A worker picked 1 time in 10 as often as the others: the fast ones run
  // ahead until the bound holds them, so the largest gap is exactly s.
  for (int workers : {2, 3, 5})
    for (uint64_t s : {0, 1, 2, 3})
      for (uint32_t seed = 0; seed < 4; ++seed) {
        ScheduleResult r;
        Schedule schedule{workers, 20, 40, s, seed};
        schedule.slow_worker = workers - 1;
        schedule.slow_odds = 10;
        run_schedule(schedule, r);
        if (HasFatalFailure()) return;
        EXPECT_EQ(r.coordinator_max_gap, s) << "W=" << workers << " s=" << s << " seed " << seed;
        EXPECT_EQ(r.max_gap_seen, s) << "W=" << workers << " s=" << s << " seed " << seed;
        EXPECT_GT(r.holds, 0u) << "W=" << workers << " s=" << s << " seed " << seed;
      }
}

TEST(BoundedStalenessCoordinator, AsyncNeverHolds) {
  for (int workers : {2, 3, 5})
    for (uint32_t seed = 0; seed < 8; ++seed) {
      ScheduleResult r;
      Schedule schedule{workers, 20, 40, std::nullopt, seed};
      schedule.slow_worker = 0;
      schedule.slow_odds = 10;
      run_schedule(schedule, r);
      if (HasFatalFailure()) return;
      EXPECT_EQ(r.holds, 0u) << "W=" << workers << " seed " << seed;
      EXPECT_EQ(r.tickets, static_cast<uint64_t>(workers) * 40);
      EXPECT_GT(r.max_gap_seen, 3u) << "W=" << workers << " seed " << seed << ": no worker ran ahead";
    }
}

TEST(BoundedStalenessCoordinator, SspZeroIsLockstep) {
  BoundedStalenessCoordinator c(3, 10, 10, 0, 0);
  step(c, 0);
  EXPECT_FALSE(c.begin(0)) << "one push ahead of workers 1 and 2";
  step(c, 1);
  EXPECT_FALSE(c.begin(0));
  EXPECT_FALSE(c.begin(1));
  step(c, 2);
  step(c, 1);
  step(c, 0);
  EXPECT_EQ(max_clock_gap(c), 0u);
}

TEST(BoundedStalenessCoordinator, SspCountsPushesNotTickets) {
  BoundedStalenessCoordinator c(2, 3, 6, 0, 0);
  step(c, 0);
  ASSERT_TRUE(is_go(c.begin(1)));  // worker 1 holds a ticket but has not pushed it
  EXPECT_FALSE(c.begin(0)) << "worker 0 has one push more than worker 1";
  c.pushed(1, 0);
  EXPECT_TRUE(is_go(c.begin(0)));
  EXPECT_EQ(max_clock_gap(c), 0u);
}

TEST(BoundedStalenessCoordinator, SspClocksStartAgainEachEpoch) {
  // s = 1, W = 2, three steps an epoch: 6 tickets, of which worker 0 takes 4.
  BoundedStalenessCoordinator c(2, 3, 6, 1, 0);
  for (int w : {0, 1, 0, 1, 0, 0}) step(c, w);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(is_stop(c.begin(1), 6));
  EXPECT_TRUE(is_stop(c.begin(0), 6));
  // Worker 0 ended two pushes ahead; in the new epoch that lead is forgotten.
  step(c, 0);
  step(c, 0);
  EXPECT_FALSE(c.begin(0)) << "two pushes ahead within the epoch";
  EXPECT_EQ(max_clock_gap(c), 1u);
}

TEST(BoundedStalenessCoordinator, WarmupHoldsAllButWorkerZeroUntilNPushes) {
  for (std::optional<uint64_t> staleness : {std::optional<uint64_t>(), std::optional<uint64_t>(0)}) {
    const std::string mode = staleness ? "ssp 0" : "async";
    BoundedStalenessCoordinator c(3, 10, 10, staleness, 4);
    EXPECT_FALSE(c.begin(1)) << mode;
    EXPECT_FALSE(c.begin(2)) << mode;
    for (int push = 0; push < 4; ++push) {
      // Worker 0 is never held, however far ahead (ssp's bound starts after the warm-up).
      ASSERT_TRUE(is_go(c.begin(0))) << mode << ", push " << push;
      EXPECT_FALSE(c.begin(1)) << mode << ", push " << push;
      c.pushed(0, 0);
    }
    EXPECT_TRUE(is_go(c.begin(1))) << mode;
    EXPECT_TRUE(is_go(c.begin(2))) << mode;
    // The bound starts from the warm-up's end: everyone at 0, so worker 0 may go too.
    EXPECT_TRUE(is_go(c.begin(0))) << mode;
    c.pushed(0, 0);
    if (staleness) {
      EXPECT_FALSE(c.begin(0)) << "ssp 0: one push ahead once the warm-up is over";
      EXPECT_EQ(max_clock_gap(c), 0u);
    } else {
      EXPECT_TRUE(is_go(c.begin(0)));
    }
  }
}

TEST(BoundedStalenessCoordinator, WarmupEndsWhenWorkerZeroLeaves) {
  BoundedStalenessCoordinator c(3, 10, 10, 1, 100);
  step(c, 0);
  EXPECT_FALSE(c.begin(1));
  EXPECT_FALSE(c.begin(2));
  c.left(0);
  EXPECT_TRUE(is_go(c.begin(1)));
  EXPECT_TRUE(is_go(c.begin(2)));
}

TEST(BoundedStalenessCoordinator, LeftWorkerNoLongerHoldsOthersBack) {
  // ssp 0, W = 3, two steps an epoch: 6 tickets.
  BoundedStalenessCoordinator c(3, 2, 4, 0, 0);
  step(c, 0);
  step(c, 1);
  ASSERT_TRUE(is_go(c.begin(2)));  // worker 2 takes a ticket and fails before pushing
  EXPECT_FALSE(c.begin(0)) << "worker 2 has not pushed yet";
  c.left(2);
  step(c, 0);  // released: the slowest live worker is at 1 too
  EXPECT_FALSE(c.begin(0));
  step(c, 1);
  step(c, 0);  // the sixth ticket
  // The epoch ends without waiting for worker 2; its unpushed ticket counts in `received`
  // (its Leave made up for it on every shard).
  EXPECT_TRUE(is_stop(c.begin(0), 6));
  EXPECT_TRUE(is_stop(c.begin(1), 6));
  step(c, 1);  // the next epoch begins once both live workers heard the end
  step(c, 0);
}

// batch:K: the step after a stale gradient takes more tickets (base batches);
// an epoch still hands out W x steps_per_epoch of them, and ssp's clocks count them.
TEST(BoundedStalenessCoordinator, BatchRuleGrowsAStaleWorkersNextStepWithinTheEpochsTickets) {
  // W = 2, 10 steps an epoch: 20 tickets; async; batch:3.
  BoundedStalenessCoordinator c(2, 10, 20, std::nullopt, 0, 0, parse_stale_policy("batch:3"));
  auto batches = [&](int w) {
    const auto d = c.begin(w);
    EXPECT_TRUE(is_go(d)) << "worker " << w;
    return d ? d->batches : 0;
  };
  EXPECT_EQ(batches(0), 1u);
  c.pushed(0, 0);
  EXPECT_EQ(batches(0), 1u);
  c.pushed(0, 3);  // one round of the 2 workers missed
  EXPECT_EQ(batches(0), 2u);
  c.pushed(0, 1);
  EXPECT_EQ(batches(0), 1u);  // back to one
  c.pushed(0, 9);
  EXPECT_EQ(batches(0), 3u);  // at most K
  c.pushed(0, 0);
  EXPECT_EQ(batches(1), 1u);  // the other worker's own staleness counts for it
  c.pushed(1, 4);
  // 9 tickets out so far: worker 1 takes 3 at a time while 3 are left, then the last 2.
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(batches(1), 3u);
    c.pushed(1, 6);
  }
  EXPECT_EQ(batches(1), 2u);
  c.pushed(1, 6);
  // 1 + 1 + 2 + 1 + 3 + 1 + 3 x 3 + 2 = 20: the epoch is over; 10 steps began, and pushed.
  EXPECT_TRUE(is_stop(c.begin(0), 10));
  EXPECT_TRUE(is_stop(c.begin(1), 10));
  ServerStats stats;
  c.add_stats(stats);
  EXPECT_EQ(stats.step_batches.bins, (std::vector<uint64_t>{0, 4, 2, 4}));
}

TEST(BoundedStalenessCoordinator, SspClocksCountBaseBatchesSoALargerStepIsNotHeldForItsSize) {
  // W = 2, s = 2, batch:4: worker 1 is given 3 base batches; after pushing it
  // is 3 tickets ahead of worker 0 (clock 0) and waits for it.
  BoundedStalenessCoordinator c(2, 100, 100, 2, 0, 0, parse_stale_policy("batch:4"));
  ASSERT_TRUE(is_go(c.begin(1)));
  c.pushed(1, 5);  // two rounds missed
  const auto big = c.begin(1);
  ASSERT_TRUE(is_go(big));
  EXPECT_EQ(big->batches, 3u);
  EXPECT_EQ(max_clock_gap(c), 1u);
  c.pushed(1, 0);
  EXPECT_FALSE(c.begin(1)) << "4 base batches ahead of worker 0, past s = 2";
  step(c, 0);
  step(c, 0);
  EXPECT_TRUE(is_go(c.begin(1))) << "2 ahead: within s";
  EXPECT_EQ(max_clock_gap(c), 2u);
}

}  // namespace
}  // namespace ptrain
