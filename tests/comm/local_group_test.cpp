#include "comm/local_group.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace ptrain {
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

TEST(LocalAllreduce, SumsForEveryRankCountAndSize) {
  for (int size = 1; size <= 8; ++size) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000003}}) {
      std::vector<double> expected(n, 0.0);
      for (int r = 0; r < size; ++r) {
        auto v = rank_data(r, n);
        for (size_t i = 0; i < n; ++i) expected[i] += v[i];
      }
      std::vector<std::vector<float>> results(static_cast<size_t>(size));
      auto errors = run_group(size, std::chrono::seconds(30), [&](int r, LocalCommunicator& comm) {
        auto v = rank_data(r, n);
        comm.allreduce(v);
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
        ASSERT_EQ(got, results[0]);
      }
    }
  }
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
