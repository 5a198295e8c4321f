// The all-reduce of IEEE halves on the local (threads) backend: every
// algorithm, 1 to 8 workers, exact sums of small integers, the same bits on
// every worker; saturation, rounding, the entry check and the byte counts.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "comm/allreduce_algorithms.hpp"
#include "comm/local_group.hpp"
#include "core/half.hpp"
#include "local_workers.hpp"
#include "comm/allreduce_printing.hpp"

namespace ptrain {

namespace {

// Runs body(comm) on `workers` threads; returns each worker's error ("" if none).
std::vector<std::string> run_workers(int workers, const std::function<void(LocalCommunicator&)>& body) {
  return test::run_local_workers(workers, std::chrono::seconds(30), [&](int, LocalCommunicator& comm) { body(comm); });
}

// Worker r's i-th value: a small integer in [-5, 5], so every partial sum of
// up to 8 workers is exact in half.
float small_integer(int rank, size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + static_cast<size_t>(rank) * 3) % 11) - 5);
}

std::vector<uint16_t> small_integers(int rank, size_t n) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float_to_half(small_integer(rank, i));
  return v;
}

constexpr AllreduceAlgorithm kAlgorithms[] = {AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring,
                                              AllreduceAlgorithm::HalvingDoubling, AllreduceAlgorithm::Tree};

class LocalHalfAllreduce : public ::testing::TestWithParam<AllreduceAlgorithm> {};

TEST_P(LocalHalfAllreduce, SumsExactlyWithTheSameBitsOnEveryWorker) {
  for (int workers = 1; workers <= 8; ++workers)
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{100003}}) {
      SCOPED_TRACE(testing::Message() << workers << " workers, " << n << " halves");
      std::vector<std::vector<uint16_t>> results(static_cast<size_t>(workers));
      const auto errors = run_workers(workers, [&](LocalCommunicator& comm) {
        auto v = small_integers(comm.rank(), n);
        allreduce_half_with(comm, v, GetParam());
        results[static_cast<size_t>(comm.rank())] = std::move(v);
      });
      for (const auto& e : errors) ASSERT_EQ(e, "");
      for (int r = 1; r < workers; ++r)
        ASSERT_EQ(results[static_cast<size_t>(r)], results[0]) << "worker " << r;
      for (size_t i = 0; i < n; ++i) {
        float expected = 0;
        for (int r = 0; r < workers; ++r) expected += small_integer(r, i);
        ASSERT_EQ(half_to_float(results[0][i]), expected) << "i " << i;
      }
    }
}

TEST_P(LocalHalfAllreduce, SumsBeyondTheHalfRangeSaturateAndNaNsLoseTheirPayloads) {
  for (int workers = 2; workers <= 5; ++workers) {
    std::vector<std::vector<uint16_t>> results(static_cast<size_t>(workers));
    const auto errors = run_workers(workers, [&](LocalCommunicator& comm) {
      // Element 0 overflows, 1 overflows negatively, 2 stays in range, 3 is
      // inf, 4 is NaN with other payloads on different workers.
      const uint16_t nan = comm.rank() == 0 ? 0x7c01 : comm.rank() == 1 ? 0xfe55 : float_to_half(1.0f);
      std::vector<uint16_t> v = {float_to_half(40000.0f), float_to_half(-40000.0f), float_to_half(1.0f),
                                 comm.rank() == 0 ? kHalfInfinity : float_to_half(65504.0f), nan};
      allreduce_half_with(comm, v, GetParam());
      results[static_cast<size_t>(comm.rank())] = v;
    });
    for (const auto& e : errors) ASSERT_EQ(e, "");
    for (const auto& v : results)
      EXPECT_EQ(v,
                (std::vector<uint16_t>{kHalfMax, static_cast<uint16_t>(0x8000 | kHalfMax),
                                       float_to_half(static_cast<float>(workers)), kHalfInfinity, kHalfNaN}))
          << workers << " workers";
  }
}

TEST_P(LocalHalfAllreduce, CountsTwoBytesPerElementWhereTheFloatVersionCountsFour) {
  for (int workers : {2, 3, 8}) {
    std::vector<CommStats> half_stats(static_cast<size_t>(workers)),
        float_stats(static_cast<size_t>(workers));
    const auto errors = run_workers(workers, [&](LocalCommunicator& comm) {
      std::vector<uint16_t> halves(10007, float_to_half(1.0f));
      allreduce_half_with(comm, halves, GetParam());
      half_stats[static_cast<size_t>(comm.rank())] = comm.stats();
      std::vector<float> floats(10007, 1.0f);
      allreduce_with(comm, floats, GetParam());
      float_stats[static_cast<size_t>(comm.rank())] = comm.stats();
    });
    for (const auto& e : errors) ASSERT_EQ(e, "");
    for (size_t r = 0; r < static_cast<size_t>(workers); ++r) {
      const CommStats& h = half_stats[r];
      const uint64_t float_sent = float_stats[r].bytes_sent - h.bytes_sent;
      const uint64_t float_received = float_stats[r].bytes_received - h.bytes_received;
      EXPECT_GT(h.bytes_sent, 0u);
      EXPECT_EQ(2 * h.bytes_sent, float_sent) << "worker " << r;
      EXPECT_EQ(2 * h.bytes_received, float_received) << "worker " << r;
      EXPECT_EQ(h.collectives, 1u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, LocalHalfAllreduce, ::testing::ValuesIn(kAlgorithms),
                         [](const auto& info) { return to_string(info.param); });

TEST(LocalHalfAllreduce, NativeSumsInFp32AndRoundsOnce) {
  // 2048 + 1 + 1: rounded once, 2050; rounded after each addition, 2048 + 1
  // ties back to 2048 every time.
  std::vector<std::vector<uint16_t>> results(3);
  const auto errors = run_workers(3, [&](LocalCommunicator& comm) {
    std::vector<uint16_t> v(5, float_to_half(comm.rank() == 0 ? 2048.0f : 1.0f));
    comm.allreduce_half(v);
    results[static_cast<size_t>(comm.rank())] = v;
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  for (const auto& v : results) EXPECT_EQ(v, std::vector<uint16_t>(5, float_to_half(2050.0f)));
  // Tree adds in half, one worker at a time: worker 1's 1 ties back to 2048, then worker 2's does.
  const auto tree_errors = run_workers(3, [&](LocalCommunicator& comm) {
    std::vector<uint16_t> v(5, float_to_half(comm.rank() == 0 ? 2048.0f : 1.0f));
    comm.allreduce_half(v, AllreduceAlgorithm::Tree);
    results[static_cast<size_t>(comm.rank())] = v;
  });
  for (const auto& e : tree_errors) ASSERT_EQ(e, "");
  for (const auto& v : results) EXPECT_EQ(v, std::vector<uint16_t>(5, float_to_half(2048.0f)));
}

TEST(LocalHalfAllreduce, RingChunksOfAnySizePair) {
  constexpr size_t kChunk = 3;
  for (int n = 2; n <= 5; ++n)
    for (size_t count = 0; count <= 4 * kChunk * static_cast<size_t>(n); ++count) {
      std::vector<std::vector<uint16_t>> results(static_cast<size_t>(n));
      const auto errors = run_workers(n, [&](LocalCommunicator& comm) {
        auto v = small_integers(comm.rank(), count);
        ring_allreduce_half(comm, v, kChunk);
        results[static_cast<size_t>(comm.rank())] = std::move(v);
      });
      for (const auto& e : errors) ASSERT_EQ(e, "") << n << " workers, " << count << " halves";
      for (size_t i = 0; i < count; ++i) {
        float expected = 0;
        for (int r = 0; r < n; ++r) expected += small_integer(r, i);
        for (int r = 0; r < n; ++r) ASSERT_EQ(half_to_float(results[static_cast<size_t>(r)][i]), expected);
      }
    }
}

TEST(LocalHalfAllreduce, IsAnotherCollectiveThanTheFloatAllreduce) {
  const auto errors = run_workers(2, [](LocalCommunicator& comm) {
    if (comm.rank() == 0) {
      std::vector<uint16_t> v(10);
      comm.allreduce_half(v);
    } else {
      std::vector<float> v(10);
      comm.allreduce(v);
    }
  });
  EXPECT_EQ(errors[0], "fp16 allreduce: worker 1 entered allreduce while worker 0 entered fp16 allreduce");
  EXPECT_EQ(errors[1], "allreduce: worker 0 entered fp16 allreduce while worker 1 entered allreduce");
}

TEST(LocalHalfAllreduce, MismatchedSizesAndAlgorithmsAreNamed) {
  auto errors = run_workers(2, [](LocalCommunicator& comm) {
    std::vector<uint16_t> v(comm.rank() == 0 ? 5 : 7);
    comm.allreduce_half(v, AllreduceAlgorithm::Ring);
  });
  EXPECT_EQ(errors[0], "fp16 ring allreduce: worker 0 brought 5 halves but worker 1 brought 7");
  EXPECT_EQ(errors[1], "fp16 ring allreduce: worker 1 brought 7 halves but worker 0 brought 5");
  errors = run_workers(2, [](LocalCommunicator& comm) {
    std::vector<uint16_t> v(5);
    comm.allreduce_half(v, comm.rank() == 0 ? AllreduceAlgorithm::Tree : AllreduceAlgorithm::HalvingDoubling);
  });
  EXPECT_EQ(
      errors[0],
      "fp16 tree allreduce: worker 1 entered fp16 hd allreduce while worker 0 entered fp16 tree allreduce");
}

// A communicator that forwards only the primitives gets the default
// allreduce_half: the algorithms straight over its send and recv.
class Forwarding : public Communicator {
 public:
  explicit Forwarding(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return "forwarding"; }
  void allreduce(std::span<float> data, AllreduceAlgorithm algorithm) override {
    inner_.allreduce(data, algorithm);
  }
  void broadcast(std::span<std::byte> data, int root) override { inner_.broadcast(data, root); }
  void barrier() override { inner_.barrier(); }
  void send(int peer, int tag, std::span<const std::byte> data) override { inner_.send(peer, tag, data); }
  void recv(int peer, int tag, std::span<std::byte> data) override { inner_.recv(peer, tag, data); }

 private:
  Communicator& inner_;
};

TEST(LocalHalfAllreduce, DefaultImplementationRunsTheAlgorithmsOverPointToPoint) {
  for (const auto algorithm : kAlgorithms) {
    std::vector<std::vector<uint16_t>> results(4);
    const auto errors = run_workers(4, [&](LocalCommunicator& comm) {
      Forwarding forwarding(comm);
      auto v = small_integers(comm.rank(), 1001);
      forwarding.allreduce_half(v, algorithm);
      results[static_cast<size_t>(comm.rank())] = std::move(v);
    });
    for (const auto& e : errors) ASSERT_EQ(e, "");
    for (size_t i = 0; i < 1001; ++i) {
      float expected = 0;
      for (int r = 0; r < 4; ++r) expected += small_integer(r, i);
      for (const auto& v : results) ASSERT_EQ(half_to_float(v[i]), expected);
    }
  }
}

}  // namespace
}  // namespace ptrain
