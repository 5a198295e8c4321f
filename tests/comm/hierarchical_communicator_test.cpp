#include "comm/hierarchical_communicator.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "comm/allreduce_algorithms.hpp"
#include "core/error.hpp"
#include "core/half.hpp"
#include "core/rng.hpp"
#include "local_workers.hpp"
#include "simulated_ranks.hpp"

namespace ptrain {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kLong{60000};

struct Shape {
  int ranks, threads;
};
// One rank, one thread per rank, and ranks of several threads.
const Shape kShapes[] = {{1, 1}, {1, 3}, {2, 1}, {2, 2}, {3, 2}, {2, 3}, {4, 2}};

std::vector<float> worker_data(int worker, size_t n) {
  Rng rng(5000 + static_cast<uint64_t>(worker));
  std::vector<float> v(n);
  for (auto& x : v) x = rng.uniform() * 2 - 1;
  return v;
}

// Small integers: every summation order gives the exact sum.
std::vector<float> integer_data(int worker, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + static_cast<size_t>(worker) * 3) % 11);
  return v;
}

TEST(HierarchicalCommunicator, EveryAlgorithmSumsExactlyWithTheSameBitsOnEveryWorker) {
  for (const Shape shape : kShapes)
    for (AllreduceAlgorithm algorithm :
         {AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring, AllreduceAlgorithm::HalvingDoubling,
          AllreduceAlgorithm::Tree, AllreduceAlgorithm::Hierarchical})
      for (size_t n : {size_t{0}, size_t{1}, size_t{5}, size_t{300007}}) {
        const int workers = shape.ranks * shape.threads;
        test::SimulatedRanks ranks(shape.ranks, shape.threads, kLong);
        std::vector<std::vector<float>> results(static_cast<size_t>(workers));
        const auto errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
          EXPECT_EQ(comm.rank(), w);
          EXPECT_EQ(comm.size(), workers);
          auto v = integer_data(w, n);
          comm.allreduce(v, algorithm);
          results[static_cast<size_t>(w)] = std::move(v);
        });
        const std::string where = fmt::format("{} x {} {} n={}", shape.ranks, shape.threads, to_string(algorithm), n);
        for (int w = 0; w < workers; ++w) ASSERT_EQ(errors[static_cast<size_t>(w)], "") << where;
        std::vector<float> exact(n, 0.0f);
        for (int w = 0; w < workers; ++w) {
          const auto v = integer_data(w, n);
          for (size_t i = 0; i < n; ++i) exact[i] += v[i];
        }
        for (int w = 0; w < workers; ++w) ASSERT_EQ(results[static_cast<size_t>(w)], exact) << where << " worker " << w;
      }
}

// What hierarchical computes, spelled out: each rank's sum in thread order,
// then the ring between the ranks on each thread's slice.
std::vector<float> hierarchical_reference(int ranks, int threads, size_t n) {
  std::vector<std::vector<float>> rank_sums(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    auto& sum = rank_sums[static_cast<size_t>(r)];
    sum = worker_data(r * threads, n);
    for (int t = 1; t < threads; ++t) {
      const auto v = worker_data(r * threads + t, n);
      for (size_t i = 0; i < n; ++i) sum[i] += v[i];
    }
  }
  const auto errors = test::run_local_workers(ranks, kLong, [&](int r, LocalCommunicator& comm) {
    std::span<float> sum(rank_sums[static_cast<size_t>(r)]);
    for (int t = 0; t < threads; ++t) {
      const size_t lo = slice_begin(n, t, threads), hi = slice_begin(n, t + 1, threads);
      ring_allreduce(comm, sum.subspan(lo, hi - lo));
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  return rank_sums[0];
}

TEST(HierarchicalCommunicator, HierarchicalIsEachRanksSumThenTheRingBetweenRanks) {
  const size_t n = 100003;
  for (const Shape shape : kShapes) {
    const int workers = shape.ranks * shape.threads;
    const auto expected = hierarchical_reference(shape.ranks, shape.threads, n);
    for (int run = 0; run < 2; ++run) {  // and from run to run
      test::SimulatedRanks ranks(shape.ranks, shape.threads, kLong);
      std::vector<std::vector<float>> results(static_cast<size_t>(workers));
      const auto errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
        auto v = worker_data(w, n);
        comm.allreduce(v, AllreduceAlgorithm::Hierarchical);
        results[static_cast<size_t>(w)] = std::move(v);
      });
      for (int w = 0; w < workers; ++w) {
        ASSERT_EQ(errors[static_cast<size_t>(w)], "");
        ASSERT_EQ(results[static_cast<size_t>(w)], expected) << shape.ranks << " x " << shape.threads << " worker " << w;
      }
    }
  }
}

// On one rank hierarchical is the shared-memory sum: native's bits on threads.
TEST(HierarchicalCommunicator, OnOneRankHierarchicalIsTheLocalNativeSum) {
  const size_t n = 50001;
  std::vector<std::vector<float>> local(3), composite(3);
  auto errors = test::run_local_workers(3, kLong, [&](int r, LocalCommunicator& comm) {
    auto v = worker_data(r, n);
    comm.allreduce(v, AllreduceAlgorithm::Native);
    local[static_cast<size_t>(r)] = std::move(v);
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  test::SimulatedRanks ranks(1, 3, kLong);
  errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
    auto v = worker_data(w, n);
    comm.allreduce(v, AllreduceAlgorithm::Hierarchical);
    composite[static_cast<size_t>(w)] = std::move(v);
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  EXPECT_EQ(composite, local);
}

// ring, hd and tree run over its point-to-point unchanged: the bits of a flat
// group of as many workers.
TEST(HierarchicalCommunicator, PointToPointAlgorithmsGiveTheFlatGroupsBits) {
  const size_t n = 40009;
  for (const Shape shape : {Shape{2, 2}, Shape{3, 2}, Shape{2, 3}})
    for (AllreduceAlgorithm algorithm :
         {AllreduceAlgorithm::Ring, AllreduceAlgorithm::HalvingDoubling, AllreduceAlgorithm::Tree}) {
      const int workers = shape.ranks * shape.threads;
      std::vector<std::vector<float>> flat(static_cast<size_t>(workers)), composite(static_cast<size_t>(workers));
      auto errors = test::run_local_workers(workers, kLong, [&](int r, LocalCommunicator& comm) {
        auto v = worker_data(r, n);
        comm.allreduce(v, algorithm);
        flat[static_cast<size_t>(r)] = std::move(v);
      });
      for (const auto& e : errors) ASSERT_EQ(e, "");
      test::SimulatedRanks ranks(shape.ranks, shape.threads, kLong);
      errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
        auto v = worker_data(w, n);
        comm.allreduce(v, algorithm);
        composite[static_cast<size_t>(w)] = std::move(v);
      });
      for (const auto& e : errors) ASSERT_EQ(e, "");
      EXPECT_EQ(composite, flat) << to_string(algorithm) << " " << shape.ranks << " x " << shape.threads;
    }
}

std::vector<uint16_t> worker_halves(int worker, size_t n) {
  const auto floats = worker_data(worker, n);
  std::vector<uint16_t> h(n);
  floats_to_halves_saturating(floats, h);
  return h;
}

// Halves: each rank's sum in fp32, rounded to half once, then the half ring
// between the ranks on each thread's slice (every addition in fp32, rounded back).
TEST(HierarchicalCommunicator, HalvesSumInTwoLevelsWithTheSameBitsEverywhere) {
  const size_t n = 20011;
  const Shape shape{3, 2};
  const int workers = shape.ranks * shape.threads;
  std::vector<std::vector<uint16_t>> rank_sums(static_cast<size_t>(shape.ranks));
  for (int r = 0; r < shape.ranks; ++r) {
    std::vector<float> sum(n);
    halves_to_floats(worker_halves(r * shape.threads, n), sum);
    for (int t = 1; t < shape.threads; ++t) add_halves_to_floats(worker_halves(r * shape.threads + t, n), sum);
    rank_sums[static_cast<size_t>(r)].resize(n);
    floats_to_halves_saturating(sum, rank_sums[static_cast<size_t>(r)]);
  }
  auto errors = test::run_local_workers(shape.ranks, kLong, [&](int r, LocalCommunicator& comm) {
    std::span<uint16_t> sum(rank_sums[static_cast<size_t>(r)]);
    for (int t = 0; t < shape.threads; ++t) {
      const size_t lo = slice_begin(n, t, shape.threads), hi = slice_begin(n, t + 1, shape.threads);
      ring_allreduce_half(comm, sum.subspan(lo, hi - lo));
    }
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  for (AllreduceAlgorithm algorithm : {AllreduceAlgorithm::Hierarchical, AllreduceAlgorithm::Native}) {
    test::SimulatedRanks ranks(shape.ranks, shape.threads, kLong);
    std::vector<std::vector<uint16_t>> results(static_cast<size_t>(workers));
    errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
      auto v = worker_halves(w, n);
      comm.allreduce_half(v, algorithm);
      results[static_cast<size_t>(w)] = std::move(v);
    });
    for (int w = 0; w < workers; ++w) {
      ASSERT_EQ(errors[static_cast<size_t>(w)], "");
      // Native's ring between these simulated ranks is the local backend's
      // shared-memory sum, whose order is the ring's for two operands only.
      if (algorithm == AllreduceAlgorithm::Hierarchical) {
        ASSERT_EQ(results[static_cast<size_t>(w)], rank_sums[0]);
      }
      ASSERT_EQ(results[static_cast<size_t>(w)], results[0]);
    }
  }
}

TEST(HierarchicalCommunicator, BroadcastsFromEveryRoot) {
  for (const Shape shape : {Shape{2, 3}, Shape{3, 2}, Shape{1, 2}, Shape{2, 1}})
    for (size_t n : {size_t{0}, size_t{1}, size_t{1001}}) {
      const int workers = shape.ranks * shape.threads;
      for (int root = 0; root < workers; ++root) {
        test::SimulatedRanks ranks(shape.ranks, shape.threads, kLong);
        std::vector<std::vector<std::byte>> got(static_cast<size_t>(workers));
        const auto errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
          std::vector<std::byte> v(n);
          for (size_t i = 0; i < n; ++i) v[i] = std::byte(static_cast<uint8_t>(i * 13 + static_cast<size_t>(w)));
          comm.broadcast(v, root);
          got[static_cast<size_t>(w)] = std::move(v);
        });
        std::vector<std::byte> expected(n);
        for (size_t i = 0; i < n; ++i) expected[i] = std::byte(static_cast<uint8_t>(i * 13 + static_cast<size_t>(root)));
        for (int w = 0; w < workers; ++w) {
          ASSERT_EQ(errors[static_cast<size_t>(w)], "");
          ASSERT_EQ(got[static_cast<size_t>(w)], expected) << "root " << root << " worker " << w << " n " << n;
        }
      }
    }
}

TEST(HierarchicalCommunicator, AllgathervGivesEveryWorkersBytesInWorkerOrder) {
  const Shape shape{3, 2};
  const int workers = shape.ranks * shape.threads;
  auto bytes_of = [](int w) {  // worker 2 brings nothing
    std::vector<std::byte> b(static_cast<size_t>(w == 2 ? 0 : 10 * w + 3));
    for (size_t i = 0; i < b.size(); ++i) b[i] = std::byte(static_cast<uint8_t>(w * 31 + static_cast<int>(i)));
    return b;
  };
  test::SimulatedRanks ranks(shape.ranks, shape.threads, kLong);
  std::vector<std::vector<std::vector<std::byte>>> got(static_cast<size_t>(workers));
  const auto errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
    for (int round = 0; round < 3; ++round) got[static_cast<size_t>(w)] = comm.allgatherv(bytes_of(w));
  });
  for (int w = 0; w < workers; ++w) {
    ASSERT_EQ(errors[static_cast<size_t>(w)], "");
    ASSERT_EQ(got[static_cast<size_t>(w)].size(), static_cast<size_t>(workers));
    for (int from = 0; from < workers; ++from)
      EXPECT_EQ(got[static_cast<size_t>(w)][static_cast<size_t>(from)], bytes_of(from)) << w << " from " << from;
  }
}

// Every worker reaches every other: within its rank and in another, on
// another thread index too, one way and both ways at once.
TEST(HierarchicalCommunicator, PointToPointBetweenAnyTwoWorkers) {
  const Shape shape{3, 2};
  const int workers = shape.ranks * shape.threads;
  auto message = [](int from, int to, size_t n) {
    std::vector<std::byte> m(n);
    for (size_t i = 0; i < n; ++i) m[i] = std::byte(static_cast<uint8_t>(from * 17 + to * 5 + static_cast<int>(i)));
    return m;
  };
  test::SimulatedRanks ranks(shape.ranks, shape.threads, kLong);
  const auto errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
    // Shift k: send to w + k, receive from w - k, every k; two messages each, in order.
    for (int k = 1; k < workers; ++k) {
      const int to = (w + k) % workers, from = (w + workers - k) % workers;
      for (size_t n : {size_t{3}, size_t{70000}}) {
        std::vector<std::byte> in(n);
        comm.sendrecv(to, message(w, to, n), from, in, 1);
        if (in != message(from, w, n)) throw Error(fmt::format("worker {} got the wrong bytes from {}", w, from));
      }
    }
    // One way: 0 sends to everyone, everyone answers 0 with another tag.
    if (w == 0) {
      for (int to = 1; to < workers; ++to) comm.send(to, 2, message(0, to, 9));
      for (int from = 1; from < workers; ++from) {
        std::vector<std::byte> in(5);
        comm.recv(from, 3, in);
        if (in != message(from, 0, 5)) throw Error(fmt::format("worker 0 got the wrong answer from {}", from));
      }
    } else {
      std::vector<std::byte> in(9);
      comm.recv(0, 2, in);
      if (in != message(0, w, 9)) throw Error(fmt::format("worker {} got the wrong bytes from 0", w));
      comm.send(0, 3, message(w, 0, 5));
    }
  });
  for (int w = 0; w < workers; ++w) EXPECT_EQ(errors[static_cast<size_t>(w)], "") << w;
}

TEST(HierarchicalCommunicator, BarrierAndABadPeer) {
  test::SimulatedRanks ranks(2, 2, kLong);
  const auto errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
    comm.barrier();
    comm.barrier();
    if (w == 1) {
      std::vector<std::byte> b(1);
      comm.send(1, 1, b);  // itself
    }
  });
  EXPECT_EQ(errors[1], "worker 1: no peer 1 in a group of 4");
}

// Entries are checked within the rank and between ranks; errors name workers.
TEST(HierarchicalCommunicator, EntryChecksNameTheWorkers) {
  {  // another size on another rank: thread t compares with thread t there
    test::SimulatedRanks ranks(2, 2, kLong);
    const auto errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
      std::vector<float> v(w >= 2 ? 8 : 7, 1.0f);
      comm.allreduce(v, AllreduceAlgorithm::Hierarchical);
    });
    const std::set<std::string> expected = {"hierarchical allreduce: worker 0 brought 7 floats but worker 2 brought 8",
                                            "hierarchical allreduce: worker 1 brought 7 floats but worker 3 brought 8",
                                            "hierarchical allreduce: worker 2 brought 8 floats but worker 0 brought 7",
                                            "hierarchical allreduce: worker 3 brought 8 floats but worker 1 brought 7"};
    // Each worker finds it, or hears of it from the first that did.
    for (const auto& e : errors) EXPECT_TRUE(expected.contains(e) || e.find(" brought ") != std::string::npos) << e;
    EXPECT_TRUE(expected.contains(errors[0]) || expected.contains(errors[1]) || expected.contains(errors[2]) ||
                expected.contains(errors[3]));
  }
  {  // another collective within the rank
    test::SimulatedRanks ranks(2, 2, kLong);
    const auto errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
      std::vector<float> v(4, 1.0f);
      if (w == 2)
        comm.barrier();
      else
        comm.allreduce(v, AllreduceAlgorithm::Ring);
    });
    EXPECT_EQ(errors[3], "ring allreduce: worker 2 entered barrier while worker 3 entered ring allreduce") << errors[3];
  }
}

TEST(HierarchicalCommunicator, ATimeoutNamesTheWorkerThatNeverArrived) {
  test::SimulatedRanks ranks(2, 2, milliseconds(300));
  const auto errors = ranks.run([&](int w, HierarchicalCommunicator& comm) {
    if (w == 3) return;  // worker 3, thread 1 of rank 1, never arrives
    std::vector<float> v(10, 1.0f);
    comm.allreduce(v, AllreduceAlgorithm::Hierarchical);
  }, false);
  // Its sibling names it; the other rank names the rank and its workers.
  EXPECT_TRUE(errors[2].starts_with("hierarchical allreduce: timed out after 0.3 s waiting for worker(s) 3 (on worker 2)"))
      << errors[2];
  for (int w : {0, 1})
    EXPECT_TRUE(errors[static_cast<size_t>(w)].starts_with(fmt::format(
        "hierarchical allreduce: worker {} gave up waiting for rank 1 (workers 2 to 3): ", w)))
        << errors[static_cast<size_t>(w)];
}

}  // namespace
}  // namespace ptrain
