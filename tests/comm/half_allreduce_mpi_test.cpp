// The all-reduce of IEEE halves on the MPI backend, as many ranks as mpirun
// started: exact sums of small integers with every algorithm (the native one
// through the user-defined MPI_Op), and for ring, hd and tree the same bits as
// the local (threads) backend, also where the additions round.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <functional>
#include <thread>

#include "comm/allreduce_algorithms.hpp"
#include "comm/local_group.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/half.hpp"
#include "core/rng.hpp"
#include "comm/allreduce_printing.hpp"

namespace ptrain {

namespace {

// Rank r's i-th value: a small integer in [-5, 5], so every partial sum is exact in half.
float small_integer(int rank, size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + static_cast<size_t>(rank) * 3) % 11) - 5);
}

std::vector<uint16_t> small_integers(int rank, size_t n) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float_to_half(small_integer(rank, i));
  return v;
}

// Values whose sums round: random halves of mixed magnitudes (finite, and
// well inside the range so that no sum saturates).
std::vector<uint16_t> rounding_halves(int rank, size_t n) {
  Rng rng(500 + static_cast<uint64_t>(rank));
  std::vector<uint16_t> v(n);
  for (auto& h : v) h = float_to_half((rng.uniform() * 2 - 1) * static_cast<float>(1 << rng.below(12)));
  return v;
}

// The same algorithm over threads, for the given number of workers (rank 0's result).
std::vector<uint16_t> local_result(int workers, AllreduceAlgorithm algorithm,
                                   const std::function<std::vector<uint16_t>(int)>& data) {
  auto group = std::make_shared<LocalGroup>(workers);
  std::vector<uint16_t> result;
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r)
    threads.emplace_back([&, r] {
      LocalCommunicator comm(group, r);
      auto v = data(r);
      allreduce_half_with(comm, v, algorithm);
      if (r == 0) result = v;
    });
  for (auto& t : threads) t.join();
  return result;
}

// Rank 0's halves, on every rank.
std::vector<uint16_t> rank0s(std::vector<uint16_t> v) {
  MPI_Bcast(v.data(), static_cast<int>(v.size()), MPI_UINT16_T, 0, MPI_COMM_WORLD);
  return v;
}

class MpiHalfAllreduce : public ::testing::TestWithParam<AllreduceAlgorithm> {};

TEST_P(MpiHalfAllreduce, SumsExactlyAndMatchesTheLocalBackendBitForBit) {
  MpiCommunicator comm(std::chrono::seconds(60));
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{100003}}) {
    auto v = small_integers(comm.rank(), n);
    allreduce_half_with(comm, v, GetParam());
    for (size_t i = 0; i < n; ++i) {
      float expected = 0;
      for (int r = 0; r < comm.size(); ++r) expected += small_integer(r, i);
      ASSERT_EQ(half_to_float(v[i]), expected) << "n " << n << " i " << i;
    }
    EXPECT_EQ(v, rank0s(v)) << "n " << n;  // the same bits on every rank
    if (GetParam() != AllreduceAlgorithm::Native) {
      EXPECT_EQ(v, local_result(comm.size(), GetParam(), [n](int r) { return small_integers(r, n); }))
          << "n " << n;
    }
  }
}

TEST_P(MpiHalfAllreduce, RoundedSumsAreTheSameOnEveryRank) {
  MpiCommunicator comm(std::chrono::seconds(60));
  for (size_t n : {size_t{7}, size_t{100003}}) {
    auto v = rounding_halves(comm.rank(), n);
    allreduce_half_with(comm, v, GetParam());
    EXPECT_EQ(v, rank0s(v)) << "n " << n;
    // The order of the additions is the algorithm's, not the backend's.
    if (GetParam() != AllreduceAlgorithm::Native) {
      EXPECT_EQ(v, local_result(comm.size(), GetParam(), [n](int r) { return rounding_halves(r, n); }))
          << "n " << n;
    }
  }
}

TEST_P(MpiHalfAllreduce, SumsBeyondTheHalfRangeSaturateAndNaNsLoseTheirPayloads) {
  MpiCommunicator comm(std::chrono::seconds(60));
  const uint16_t nan = comm.rank() == 0 ? 0x7c01 : comm.rank() == 1 ? 0xfe55 : float_to_half(1.0f);
  std::vector<uint16_t> v = {float_to_half(40000.0f), float_to_half(-40000.0f), float_to_half(1.0f), nan};
  allreduce_half_with(comm, v, GetParam());
  if (comm.size() == 1) {
    EXPECT_EQ(v, (std::vector<uint16_t>{float_to_half(40000.0f), float_to_half(-40000.0f),
                                        float_to_half(1.0f), nan}));
  } else {
    EXPECT_EQ(v, (std::vector<uint16_t>{kHalfMax, static_cast<uint16_t>(0x8000 | kHalfMax),
                                        float_to_half(static_cast<float>(comm.size())), kHalfNaN}));
  }
}

TEST_P(MpiHalfAllreduce, CountsTwoBytesPerElementWhereTheFloatVersionCountsFour) {
  MpiCommunicator comm(std::chrono::seconds(60));
  // 10080 divides by 1 to 8: the native count, 2 (n - 1) / n of the bytes, rounds alike for both.
  std::vector<uint16_t> halves(10080, float_to_half(1.0f));
  allreduce_half_with(comm, halves, GetParam());
  const CommStats h = comm.stats();
  std::vector<float> floats(10080, 1.0f);
  allreduce_with(comm, floats, GetParam());
  EXPECT_EQ(2 * h.bytes_sent, comm.stats().bytes_sent - h.bytes_sent);
  EXPECT_EQ(2 * h.bytes_received, comm.stats().bytes_received - h.bytes_received);
  EXPECT_EQ(h.collectives, 1u);
}

INSTANTIATE_TEST_SUITE_P(All, MpiHalfAllreduce,
                         ::testing::Values(AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring,
                                           AllreduceAlgorithm::HalvingDoubling, AllreduceAlgorithm::Tree),
                         [](const auto& info) { return to_string(info.param); });

// What `call` threw on this rank ("" if nothing), and every rank's, in rank order.
std::vector<std::string> errors_on_every_rank(const std::function<void()>& call) {
  std::string mine;
  try {
    call();
  } catch (const std::exception& e) {
    mine = e.what();
  }
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<std::string> all;
  for (int r = 0; r < size; ++r) {
    std::string s = mine;
    int length = static_cast<int>(s.size());
    MPI_Bcast(&length, 1, MPI_INT, r, MPI_COMM_WORLD);
    s.resize(static_cast<size_t>(length));
    MPI_Bcast(s.data(), length, MPI_CHAR, r, MPI_COMM_WORLD);
    all.push_back(s);
  }
  return all;
}

TEST(MpiHalfAllreduceChecks, IsAnotherCollectiveThanTheFloatAllreduce) {
  MpiCommunicator comm(std::chrono::seconds(60));
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  const auto errors = errors_on_every_rank([&] {
    if (comm.rank() == 0) {
      std::vector<float> v(10);
      comm.allreduce(v, AllreduceAlgorithm::Ring);
    } else {
      std::vector<uint16_t> v(10);
      comm.allreduce_half(v, AllreduceAlgorithm::Ring);
    }
  });
  EXPECT_EQ(errors[0],
            "ring allreduce: rank 1 entered fp16 ring allreduce while rank 0 entered ring allreduce");
  for (int r = 1; r < comm.size(); ++r)
    EXPECT_EQ(
        errors[static_cast<size_t>(r)],
        fmt::format("fp16 ring allreduce: rank 0 entered ring allreduce while rank {} entered fp16 ring "
                    "allreduce",
                    r));
}

TEST(MpiHalfAllreduceChecks, MismatchedSizesNameBothSizes) {
  MpiCommunicator comm(std::chrono::seconds(60));
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  const auto errors = errors_on_every_rank([&] {
    std::vector<uint16_t> v(comm.rank() == 1 ? 500 : 700);
    comm.allreduce_half(v);
  });
  EXPECT_EQ(errors[1], "fp16 allreduce: rank 1 brought 500 halves but rank 0 brought 700");
  EXPECT_EQ(errors[0], "fp16 allreduce: rank 0 brought 700 halves but rank 1 brought 500");
}

TEST(MpiHalfAllreduceChecks, ManyCommunicatorsEachWithTheirOwnOperation) {
  // The MPI_Op is created with each communicator and freed with it.
  for (int k = 0; k < 20; ++k) {
    MpiCommunicator comm(std::chrono::seconds(60));
    std::vector<uint16_t> v(3, float_to_half(1.0f));
    comm.allreduce_half(v);
    EXPECT_EQ(v, std::vector<uint16_t>(3, float_to_half(static_cast<float>(comm.size()))));
  }
}

}  // namespace
}  // namespace ptrain
