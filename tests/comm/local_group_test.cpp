#include "comm/local_group.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "comm/allreduce_algorithms.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"

namespace ptrain {

// Short test names in CTest.
inline void PrintTo(AllreduceAlgorithm a, std::ostream* out) { *out << to_string(a); }

namespace {

// Runs body(rank, comm) on `size` threads; returns each rank's error message ("" if none).
std::vector<std::string> run_group(int size, std::chrono::milliseconds timeout,
                                   const std::function<void(int, LocalCommunicator&)>& body) {
  auto group = std::make_shared<LocalGroup>(size, timeout);
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      LocalCommunicator comm(group, r);
      try {
        body(r, comm);
      } catch (const Error& e) {
        errors[static_cast<size_t>(r)] = e.what();
        group->abort(e.what());
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

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
      auto errors = run_group(size, std::chrono::seconds(60), [&](int r, LocalCommunicator& comm) {
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

TEST_P(AllreduceAlgorithms, TimeoutNamesTheMissingWorker) {
  if (GetParam() == AllreduceAlgorithm::Native) GTEST_SKIP() << "covered by LocalCollectives";
  auto errors = run_group(4, std::chrono::milliseconds(200), [&](int r, LocalCommunicator& comm) {
    if (r == 3) return;  // worker 3 never arrives
    std::vector<float> v(10, 1.0f);
    allreduce_with(comm, v, GetParam());
  });
  bool named = false;
  for (int r : {0, 1, 2}) {
    const auto& e = errors[static_cast<size_t>(r)];
    EXPECT_FALSE(e.empty()) << "worker " << r << " did not fail";
    named |= e.find("timed out after 0.2 s waiting for worker 3") != std::string::npos ||
             e.find("worker(s) 3 never arrived") != std::string::npos;
  }
  EXPECT_TRUE(named) << errors[0] << " | " << errors[1] << " | " << errors[2];
}

TEST_P(AllreduceAlgorithms, MismatchedSizesAreAnError) {
  auto errors = run_group(3, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
    std::vector<float> v(r == 1 ? 500 : 700, 1.0f);
    allreduce_with(comm, v, GetParam());
  });
  bool sizes_named = false;
  for (const auto& e : errors) sizes_named |= e.find(" bytes but worker ") != std::string::npos;
  EXPECT_TRUE(sizes_named) << errors[0] << " | " << errors[1] << " | " << errors[2];
}

INSTANTIATE_TEST_SUITE_P(All, AllreduceAlgorithms,
                         ::testing::Values(AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring,
                                           AllreduceAlgorithm::HalvingDoubling, AllreduceAlgorithm::Tree),
                         [](const auto& info) { return to_string(info.param); });

TEST(RingAllreduce, SmallChunksGiveTheSameBits) {
  std::vector<std::vector<float>> whole(5), chunked(5);
  run_group(5, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
    auto a = rank_data(r, 1001), b = a;
    ring_allreduce(comm, a);
    ring_allreduce(comm, b, 3);
    whole[static_cast<size_t>(r)] = a;
    chunked[static_cast<size_t>(r)] = b;
  });
  EXPECT_EQ(whole, chunked);
}

TEST(LocalPointToPoint, DeliversInOrderPerTagAndChecksSizes) {
  auto errors = run_group(2, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
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
    run_group(3, std::chrono::seconds(30), [&](int r, LocalCommunicator& comm) {
      auto v = rank_data(r, 1001);
      comm.broadcast(std::as_writable_bytes(std::span<float>(v)), root);
      results[static_cast<size_t>(r)] = v;
    });
    for (const auto& v : results) EXPECT_EQ(v, rank_data(root, 1001));
  }
}

TEST(LocalCollectives, TimeoutNamesTheMissingWorker) {
  auto errors = run_group(4, std::chrono::milliseconds(200), [&](int r, LocalCommunicator& comm) {
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

TEST(LocalCollectives, MismatchedSizesNameBothSizes) {
  auto errors = run_group(3, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
    std::vector<float> v(r == 1 ? 5 : 7, 1.0f);
    comm.allreduce(v);
  });
  for (const auto& e : errors) {
    EXPECT_NE(e.find("allreduce"), std::string::npos) << e;
    EXPECT_NE(e.find("20 bytes"), std::string::npos) << e;
    EXPECT_NE(e.find("28 bytes"), std::string::npos) << e;
  }
}

TEST(LocalCollectives, CountsBytesMovedBetweenWorkers) {
  std::vector<CommStats> stats(4);
  run_group(4, std::chrono::seconds(10), [&](int r, LocalCommunicator& comm) {
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
