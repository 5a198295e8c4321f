#include "comm/local_group.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <functional>
#include <thread>

#include "comm/allreduce_algorithms.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "local_workers.hpp"
#include "comm/allreduce_printing.hpp"

namespace ptrain {

namespace {


std::vector<float> rank_data(int rank, size_t n) {
  Rng rng(1000 + static_cast<uint64_t>(rank));
  std::vector<float> v(n);
  for (auto& x : v) x = rng.uniform() * 2 - 1;
  return v;
}

class AllreduceAlgorithms : public ::testing::TestWithParam<AllreduceAlgorithm> {};

TEST_P(AllreduceAlgorithms, SumForEveryRankCountAndSize) {
  for (int size = 1; size <= 8; ++size) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000003}}) {
      std::vector<double> expected(n, 0.0);
      for (int r = 0; r < size; ++r) {
        auto v = rank_data(r, n);
        for (size_t i = 0; i < n; ++i) expected[i] += v[i];
      }
      std::vector<std::vector<float>> results(static_cast<size_t>(size));
      auto errors = test::run_local_workers(size, std::chrono::seconds(60), [&](int r, LocalCommunicator& comm) {
        auto v = rank_data(r, n);
        allreduce_with(comm, v, GetParam());
        results[static_cast<size_t>(r)] = std::move(v);
      });
      for (int r = 0; r < size; ++r) {
        ASSERT_EQ(errors[static_cast<size_t>(r)], "");
        const auto& got = results[static_cast<size_t>(r)];
        ASSERT_EQ(got.size(), n);
        for (size_t i = 0; i < n; ++i)
          ASSERT_NEAR(got[i], expected[i], 1e-5)
              << "size " << size << " n " << n << " rank " << r << " i " << i;
        // Every rank holds bit-identical sums.
        ASSERT_EQ(got, results[0]) << "size " << size << " n " << n << " rank " << r;
      }
    }
  }
}

// The native all-reduce's sum is in worker order, whatever the threads'
// timing: its bits are those of a plain loop, on every worker.
TEST(LocalAllreduce, NativeSumsInWorkerOrder) {
  for (int size : {2, 3, 5}) {
    for (size_t n : {size_t{1}, size_t{2047}, size_t{2049}, size_t{100003}}) {
      std::vector<float> expected = rank_data(0, n);
      for (int r = 1; r < size; ++r) {
        const auto v = rank_data(r, n);
        for (size_t i = 0; i < n; ++i) expected[i] += v[i];
      }
      std::vector<std::vector<float>> results(static_cast<size_t>(size));
      auto errors = test::run_local_workers(size, std::chrono::seconds(60), [&](int r, LocalCommunicator& comm) {
        auto v = rank_data(r, n);
        comm.allreduce(v, AllreduceAlgorithm::Native);
        results[static_cast<size_t>(r)] = std::move(v);
      });
      for (int r = 0; r < size; ++r) {
        ASSERT_EQ(errors[static_cast<size_t>(r)], "");
        ASSERT_EQ(results[static_cast<size_t>(r)], expected) << "size " << size << " n " << n << " rank " << r;
      }
    }
  }
}

// "allreduce" for native, "ring allreduce" and so on otherwise: how errors name the collective.
std::string collective_name(AllreduceAlgorithm a) {
  return a == AllreduceAlgorithm::Native ? "allreduce" : to_string(a) + " allreduce";
}

TEST_P(AllreduceAlgorithms, TimeoutNamesTheMissingWorker) {
  const std::string name = collective_name(GetParam());
  auto errors = test::run_local_workers(4, std::chrono::milliseconds(200), [&](int r, LocalCommunicator& comm) {
    if (r == 3) return;  // worker 3 never arrives
    std::vector<float> v(10, 1.0f);
    allreduce_with(comm, v, GetParam());
  });
  EXPECT_EQ(errors[3], "");
  for (int r : {0, 1, 2}) {
    const auto& e = errors[static_cast<size_t>(r)];
    // "(on worker 1)": whichever worker gave up first; the others share its error.
    EXPECT_TRUE(e.starts_with(name + ": timed out after 0.2 s waiting for worker(s) 3 (on worker ")) << e;
  }
}

TEST_P(AllreduceAlgorithms, MismatchedSizesNameBothSizesOnEveryWorker) {
  const std::string name = collective_name(GetParam());
  // A long timeout: the sizes are compared on entry, so nobody waits for it.
  auto errors = test::run_local_workers(3, std::chrono::seconds(60), [&](int r, LocalCommunicator& comm) {
    std::vector<float> v(r == 1 ? 500 : 700, 1.0f);
    allreduce_with(comm, v, GetParam());
  });
  EXPECT_EQ(errors[0], name + ": worker 0 brought 700 floats but worker 1 brought 500");
  EXPECT_EQ(errors[1], name + ": worker 1 brought 500 floats but worker 0 brought 700");
  EXPECT_EQ(errors[2], name + ": worker 2 brought 700 floats but worker 1 brought 500");
}

TEST_P(AllreduceAlgorithms, WorkerInAnotherCollectiveIsNamed) {
  const std::string name = collective_name(GetParam());
  auto errors = test::run_local_workers(3, std::chrono::seconds(60), [&](int r, LocalCommunicator& comm) {
    std::vector<float> v(10, 1.0f);
    if (r == 2)
      comm.barrier();  // skipped the all-reduce
    else
      allreduce_with(comm, v, GetParam());
  });
  EXPECT_EQ(errors[0], name + ": worker 2 entered barrier while worker 0 entered " + name);
  EXPECT_EQ(errors[1], name + ": worker 2 entered barrier while worker 1 entered " + name);
  EXPECT_EQ(errors[2], "barrier: worker 0 entered " + name + " while worker 2 entered barrier");
}

TEST_P(AllreduceAlgorithms, CollectivesStillWorkAfterOthers) {
  // The entry check must not confuse consecutive collectives of any kind.
  auto errors = test::run_local_workers(3, std::chrono::seconds(60), [&](int r, LocalCommunicator& comm) {
    for (int i = 0; i < 50; ++i) {
      std::vector<float> v(static_cast<size_t>(i % 7), static_cast<float>(r));
      allreduce_with(comm, v, GetParam());
      EXPECT_EQ(v, std::vector<float>(v.size(), 3.0f)) << "round " << i;
      if (i % 3 == 0) comm.barrier();
      if (i % 5 == 0) {
        EXPECT_EQ(comm.allgatherv({}).size(), 3u);
      }
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

INSTANTIATE_TEST_SUITE_P(All, AllreduceAlgorithms,
                         ::testing::Values(AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring,
                                           AllreduceAlgorithm::HalvingDoubling, AllreduceAlgorithm::Tree,
                                           AllreduceAlgorithm::Hierarchical),
                         [](const auto& info) { return to_string(info.param); });

TEST(RingAllreduce, SmallChunksGiveTheSameBits) {
  std::vector<std::vector<float>> whole(5), chunked(5);
  test::run_local_workers(5, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
    auto a = rank_data(r, 1001), b = a;
    ring_allreduce(comm, a);
    ring_allreduce(comm, b, 3);
    whole[static_cast<size_t>(r)] = a;
    chunked[static_cast<size_t>(r)] = b;
  });
  EXPECT_EQ(whole, chunked);
}

TEST(LocalPointToPoint, DeliversInOrderPerTagAndChecksSizes) {
  auto errors = test::run_local_workers(2, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
    std::vector<float> a{1, 2, 3}, b{4, 5};
    if (r == 0) {
      comm.send(1, 7, std::as_bytes(std::span<const float>(a)));
      comm.send(1, 7, std::as_bytes(std::span<const float>(b)));
      comm.send(1, 8, std::as_bytes(std::span<const float>(b)));
    } else {
      std::vector<float> x(3), y(2), z(3);
      comm.recv(0, 8, std::as_writable_bytes(std::span<float>(y)));
      EXPECT_EQ(y, b);
      comm.recv(0, 7, std::as_writable_bytes(std::span<float>(x)));
      EXPECT_EQ(x, a);
      comm.recv(0, 7, std::as_writable_bytes(std::span<float>(z)));  // 2 floats arrive: an error
    }
  });
  EXPECT_NE(errors[1].find("worker 0 sent 8 bytes but worker 1 expected 12 bytes"), std::string::npos)
      << errors[1];
}

TEST(LocalBroadcast, CopiesRootBytesEverywhere) {
  for (int root = 0; root < 3; ++root) {
    std::vector<std::vector<float>> results(3);
    test::run_local_workers(3, std::chrono::seconds(30), [&](int r, LocalCommunicator& comm) {
      auto v = rank_data(r, 1001);
      comm.broadcast(std::as_writable_bytes(std::span<float>(v)), root);
      results[static_cast<size_t>(r)] = v;
    });
    for (const auto& v : results) EXPECT_EQ(v, rank_data(root, 1001));
  }
}

TEST(LocalCollectives, TimeoutNamesTheMissingWorker) {
  auto errors = test::run_local_workers(4, std::chrono::milliseconds(200), [&](int r, LocalCommunicator& comm) {
    if (r == 2) return;  // worker 2 never arrives
    std::vector<float> v(10, 1.0f);
    comm.allreduce(v);
  });
  EXPECT_EQ(errors[2], "");
  for (int r : {0, 1, 3}) {
    EXPECT_NE(errors[static_cast<size_t>(r)].find("allreduce"), std::string::npos)
        << errors[static_cast<size_t>(r)];
    EXPECT_NE(errors[static_cast<size_t>(r)].find("worker(s) 2"), std::string::npos)
        << errors[static_cast<size_t>(r)];
  }
}

// The threads of one MPI rank in a hierarchical run are workers rank x T ..:
// the group names its members so.
TEST(LocalGroup, NamesItsMembersFromTheirFirstWorker) {
  auto group = std::make_shared<LocalGroup>(2, std::chrono::milliseconds(200), 4);
  std::string barrier, message;
  std::thread first([&] {
    try {
      group->arrive_and_wait(0, "barrier");  // member 1 (worker 5) never arrives
    } catch (const Error& e) {
      barrier = e.what();
    }
  });
  first.join();
  EXPECT_EQ(barrier, "barrier: timed out after 0.2 s waiting for worker(s) 5 (on worker 4)");
  auto other = std::make_shared<LocalGroup>(2, std::chrono::milliseconds(200), 4);
  std::vector<std::byte> in(3);
  try {
    other->take(1, 0, 1, in);
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_TRUE(message.starts_with("ring allreduce: worker 4 timed out after 0.2 s waiting for worker 5")) << message;
}

// Spins until this thread has run for `cpu` (time stopped does not count).
void compute_for(std::chrono::milliseconds cpu) {
  auto used = [] {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
  };
  const auto until = used() + cpu;
  while (used() < until) {
  }
}

TEST(LocalCollectives, AProcessStoppedLongerThanTheTimeoutGoesOn) {
  // The whole process stopped (SIGSTOP, ^Z) for three timeouts while worker 1
  // waits for worker 0, which computes: once continued, worker 0 arrives, and
  // nobody is blamed for the time nobody ran. Run in a child, which is stopped.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int status = 3;
    try {
      const auto errors =
          test::run_local_workers(2, std::chrono::seconds(1), [](int r, LocalCommunicator& comm) {
            for (int i = 0; i < 40; ++i) {
              if (r == 0) compute_for(std::chrono::milliseconds(20));
              comm.barrier();
            }
          });
      status = errors[0].empty() && errors[1].empty() ? 0 : 1;
      if (status != 0) std::fprintf(stderr, "child: %s | %s\n", errors[0].c_str(), errors[1].c_str());
    } catch (...) {
      status = 2;
    }
    std::_Exit(status);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  ::kill(child, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ::kill(child, SIGCONT);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(LocalCollectives, MismatchedSizesNameBothSizes) {
  auto errors = test::run_local_workers(3, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
    std::vector<float> v(r == 1 ? 5 : 7, 1.0f);
    comm.allreduce(v);
  });
  EXPECT_EQ(errors[0], "allreduce: worker 0 brought 7 floats but worker 1 brought 5");
  EXPECT_EQ(errors[1], "allreduce: worker 1 brought 5 floats but worker 0 brought 7");
  EXPECT_EQ(errors[2], "allreduce: worker 2 brought 7 floats but worker 1 brought 5");
}

// The first worker to find the mismatch fails and aborts the group at once;
// its peer, still leaving the entry barrier, must not take that abort for its
// own failure. Repeated, because the window is a few instructions wide.
TEST(LocalCollectives, EachWorkerReportsItsOwnMismatchEvenWhenThePeerFailsFirst) {
  for (int i = 0; i < 500; ++i) {
    auto errors = test::run_local_workers(2, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
      std::vector<float> v(r == 1 ? 5 : 7, 1.0f);
      comm.allreduce(v);
    });
    ASSERT_EQ(errors[0], "allreduce: worker 0 brought 7 floats but worker 1 brought 5") << "round " << i;
    ASSERT_EQ(errors[1], "allreduce: worker 1 brought 5 floats but worker 0 brought 7") << "round " << i;
  }
}

TEST(LocalCollectives, SkippedBarrierNamesTheMissingWorker) {
  auto errors = test::run_local_workers(3, std::chrono::milliseconds(200), [&](int r, LocalCommunicator& comm) {
    if (r != 1) comm.barrier();
  });
  for (int r : {0, 2}) {
    const auto& e = errors[static_cast<size_t>(r)];
    EXPECT_TRUE(e.starts_with("barrier: timed out after 0.2 s waiting for worker(s) 1 (on worker ")) << e;
  }
}

TEST(LocalBroadcast, MismatchedRootsAndSizesAreNamed) {
  auto roots = test::run_local_workers(3, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
    std::vector<std::byte> v(8);
    comm.broadcast(v, r == 2 ? 1 : 0);
  });
  EXPECT_EQ(roots[0], "broadcast: worker 0 named root 0 but worker 2 named root 1");
  EXPECT_EQ(roots[2], "broadcast: worker 2 named root 1 but worker 0 named root 0");
  auto sizes = test::run_local_workers(3, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
    std::vector<std::byte> v(r == 2 ? 12 : 8);
    comm.broadcast(v, 0);
  });
  EXPECT_EQ(sizes[1], "broadcast: worker 1 brought 8 bytes but worker 2 brought 12");
  EXPECT_EQ(sizes[2], "broadcast: worker 2 brought 12 bytes but worker 0 brought 8");
}

TEST(LocalAllgatherv, GathersEverySizeInRankOrder) {
  std::vector<std::vector<std::vector<std::byte>>> results(4);
  std::vector<CommStats> stats(4);
  auto errors = test::run_local_workers(4, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
    std::vector<std::byte> mine(static_cast<size_t>(r), std::byte(r));  // worker 0 brings nothing
    results[static_cast<size_t>(r)] = comm.allgatherv(mine);
    stats[static_cast<size_t>(r)] = comm.stats();
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(errors[static_cast<size_t>(r)], "");
    ASSERT_EQ(results[static_cast<size_t>(r)].size(), 4u);
    for (int from = 0; from < 4; ++from)
      EXPECT_EQ(results[static_cast<size_t>(r)][static_cast<size_t>(from)],
                std::vector<std::byte>(static_cast<size_t>(from), std::byte(from)));
    EXPECT_EQ(stats[static_cast<size_t>(r)].bytes_sent, static_cast<uint64_t>(r) * 3);
    EXPECT_EQ(stats[static_cast<size_t>(r)].bytes_received, static_cast<uint64_t>(6 - r));
  }
}

TEST(LocalCollectives, CountsBytesMovedBetweenWorkers) {
  std::vector<CommStats> stats(4);
  test::run_local_workers(4, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
    std::vector<float> v(1000, 1.0f);
    comm.allreduce(v);
    stats[static_cast<size_t>(r)] = comm.stats();
  });
  // Each worker reads 3 peers' parts of its 250-float slice, then the 750 floats of the other slices.
  for (const auto& s : stats) {
    EXPECT_EQ(s.bytes_received, (3 * 250 + 750) * sizeof(float));
    EXPECT_EQ(s.bytes_sent, s.bytes_received);
  }
}

}  // namespace
}  // namespace ptrain
