// The gloo transport (comm/gloo_communicator.hpp) over as many ranks as
// mpirun started: every all-reduce gives what it gives over MPI (ptrain's
// algorithms the same bits, Gloo's ring the same bits on every rank), point-
// to-point reaches every rank, a rank that never enters is named, and worker
// threads in ranks run the two-level all-reduce over it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "comm/allreduce_algorithms.hpp"
#include "comm/gloo_communicator.hpp"
#include "comm/hierarchical_communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "core/half.hpp"
#include "core/rng.hpp"
#include "mpi_test_support.hpp"

namespace ptrain {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kLong(60000);

#define SKIP_WITHOUT_GLOO() \
  if (!gloo_available()) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)"

// Made once every rank has arrived (the setup is a collective under `timeout`).
std::unique_ptr<Communicator> gloo_over_ranks(milliseconds timeout) {
  MPI_Barrier(MPI_COMM_WORLD);
  return make_gloo_communicator(std::make_unique<MpiCommunicator>(timeout), timeout);
}

std::vector<float> random_data(int rank, size_t n) {
  Rng rng(9100 + static_cast<uint64_t>(rank));
  std::vector<float> v(n);
  for (auto& x : v) x = rng.uniform() * 2 - 1;
  return v;
}

// A value's bits, so that every rank can compare its result with the others'.
template <typename T>
std::string bits_of(const std::vector<T>& v) {
  uint64_t h = 1469598103934665603ull;
  for (const T& x : v) {
    uint32_t word = 0;
    std::memcpy(&word, &x, sizeof x);
    h = (h ^ word) * 1099511628211ull;
  }
  return std::to_string(h);
}

bool same_on_every_rank(const std::string& mine) {
  const auto all = from_every_rank(mine);
  return std::all_of(all.begin(), all.end(), [&](const std::string& s) { return s == mine; });
}

TEST(GlooTransport, EveryAlgorithmSumsAsItDoesOverMpi) {
  SKIP_WITHOUT_GLOO();
  auto gloo = gloo_over_ranks(kLong);
  MpiCommunicator mpi(kLong);
  EXPECT_EQ(gloo->backend(), "mpi+gloo");
  ASSERT_EQ(gloo->size(), mpi.size());
  ASSERT_EQ(gloo->rank(), mpi.rank());
  const int n_ranks = mpi.size();
  for (AllreduceAlgorithm algorithm :
       {AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring, AllreduceAlgorithm::HalvingDoubling,
        AllreduceAlgorithm::Tree, AllreduceAlgorithm::Hierarchical})
    // Past Gloo's 1 MiB segments and ptrain's 1 MiB chunks too.
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{(1 << 18) + 3}, size_t{786437}}) {
      SCOPED_TRACE(fmt::format("{} of {} floats", to_string(algorithm), n));
      auto over_gloo = random_data(mpi.rank(), n), over_mpi = over_gloo;
      gloo->allreduce(over_gloo, algorithm);
      mpi.allreduce(over_mpi, algorithm);
      if (algorithm != AllreduceAlgorithm::Native) {
        // The same algorithm over other wires: the same additions.
        EXPECT_EQ(over_gloo, over_mpi);
        continue;
      }
      // Gloo's ring adds in its own order: the sum within rounding, the same bits everywhere.
      EXPECT_TRUE(same_on_every_rank(bits_of(over_gloo)));
      std::vector<double> exact(n, 0.0);
      for (int r = 0; r < n_ranks; ++r) {
        const auto theirs = random_data(r, n);
        for (size_t i = 0; i < n; ++i) exact[i] += theirs[i];
      }
      for (size_t i = 0; i < n; ++i) ASSERT_NEAR(over_gloo[i], exact[i], 1e-5 * n_ranks) << i;
    }
}

TEST(GlooTransport, HalvesSumAsTheyDoOverMpi) {
  SKIP_WITHOUT_GLOO();
  auto gloo = gloo_over_ranks(kLong);
  MpiCommunicator mpi(kLong);
  const size_t n = 300007;
  std::vector<uint16_t> mine(n);
  floats_to_halves_saturating(random_data(mpi.rank(), n), mine);
  for (AllreduceAlgorithm algorithm : {AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring}) {
    SCOPED_TRACE(to_string(algorithm));
    auto over_gloo = mine, over_mpi = mine;
    gloo->allreduce_half(over_gloo, algorithm);
    mpi.allreduce_half(over_mpi, algorithm);
    if (algorithm == AllreduceAlgorithm::Ring) {
      EXPECT_EQ(over_gloo, over_mpi);
    } else {
      EXPECT_TRUE(same_on_every_rank(bits_of(over_gloo)));
      std::vector<float> a(n), b(n);
      halves_to_floats(over_gloo, a);
      halves_to_floats(over_mpi, b);
      // Rounded to half after every addition, in two orders: a few half ulps apart at most.
      for (size_t i = 0; i < n; ++i) ASSERT_NEAR(a[i], b[i], 4e-3f * static_cast<float>(mpi.size())) << i;
    }
  }
}

TEST(GlooTransport, PointToPointAndAllgathervReachEveryRank) {
  SKIP_WITHOUT_GLOO();
  auto gloo = gloo_over_ranks(kLong);
  const int n = gloo->size(), me = gloo->rank();
  auto bytes_of = [](int from, int to, size_t size) {
    std::vector<std::byte> b(size);
    for (size_t i = 0; i < size; ++i) b[i] = std::byte(static_cast<uint8_t>(from * 31 + to * 7 + static_cast<int>(i)));
    return b;
  };
  for (size_t size : {size_t{0}, size_t{1}, size_t{70001}, size_t{3 << 20}})
    for (int k = 1; k < n; ++k) {
      const int to = (me + k) % n, from = (me + n - k) % n;
      std::vector<std::byte> in(size);
      gloo->sendrecv(to, bytes_of(me, to, size), from, in, 1);
      EXPECT_EQ(in, bytes_of(from, me, size)) << "from rank " << from << ", " << size << " bytes";
    }
  // Every rank's bytes of its own size (rank 1's empty), on every rank.
  const auto all = gloo->allgatherv(bytes_of(me, me, me == 1 ? 0 : size_t(1000 * me + 3)));
  ASSERT_EQ(all.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(all[static_cast<size_t>(r)], bytes_of(r, r, r == 1 ? 0 : size_t(1000 * r + 3))) << "rank " << r;
  // Two messages with one tag arrive in the order they were sent.
  if (n > 1) {
    if (me == 0) {
      gloo->send(1, 2, bytes_of(0, 1, 10));
      gloo->send(1, 2, bytes_of(0, 1, 20));
    } else if (me == 1) {
      std::vector<std::byte> first(10), second(20);
      gloo->recv(0, 2, first);
      gloo->recv(0, 2, second);
      EXPECT_EQ(first, bytes_of(0, 1, 10));
      EXPECT_EQ(second, bytes_of(0, 1, 20));
    }
  }
  gloo->barrier();
}

TEST(GlooTransport, AnotherSizeOnAnotherRankIsNamedOnEveryRank) {
  SKIP_WITHOUT_GLOO();
  auto gloo = gloo_over_ranks(kLong);
  if (gloo->size() == 1) GTEST_SKIP() << "needs two ranks";
  std::vector<float> v(gloo->rank() == 0 ? 9 : 4, 1.0f);
  const std::string error = error_of([&] { gloo->allreduce(v); });
  EXPECT_NE(error.find("allreduce: rank "), std::string::npos) << error;
  EXPECT_NE(error.find(" floats but rank "), std::string::npos) << error;
  EXPECT_NE(error.find("9"), std::string::npos) << error;
}

TEST(GlooTransport, RankThatNeverEntersIsNamedAndTheCommunicatorGivesUp) {
  SKIP_WITHOUT_GLOO();
  auto gloo = gloo_over_ranks(milliseconds(500));
  if (gloo->size() == 1) GTEST_SKIP() << "needs two ranks";
  const int last = gloo->size() - 1;
  std::string error, later;
  if (gloo->rank() != last) {  // the last rank never arrives
    std::vector<float> v(1000, 1.0f);
    error = error_of([&] { gloo->allreduce(v); });
    later = error_of([&] { gloo->allreduce(v); });
  }
  // The last rank waits here, in a blocking MPI call that answers no roll call, as a rank that is not there.
  MPI_Barrier(MPI_COMM_WORLD);
  const auto errors = from_every_rank(error), laters = from_every_rank(later);
  for (int r = 0; r < last; ++r) {
    const auto& e = errors[static_cast<size_t>(r)];
    EXPECT_NE(e.find(fmt::format("allreduce: timed out after 0.5 s waiting for rank(s) ")), std::string::npos) << e;
    // The roll call names the rank that is not there, however the pairs broke.
    EXPECT_NE(e.find(fmt::format("rank(s) {} stopped answering", last)), std::string::npos) << e;
    EXPECT_NE(laters[static_cast<size_t>(r)].find("the gloo transport failed earlier"), std::string::npos)
        << laters[static_cast<size_t>(r)];
  }
  EXPECT_EQ(errors[static_cast<size_t>(last)], "");
}

TEST(GlooTransport, WorkerThreadsInRanksRunEveryAlgorithmOverIt) {
  SKIP_WITHOUT_GLOO();
  const int threads = 2;
  auto value = [](int worker, size_t i) { return static_cast<float>((i * 5 + static_cast<size_t>(worker) * 3) % 13); };
  const auto errors = run_threads(
      threads, kLong,
      [&](int w, HierarchicalCommunicator& comm) {
        for (AllreduceAlgorithm algorithm :
             {AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring, AllreduceAlgorithm::Hierarchical})
          for (size_t n : {size_t{7}, size_t{(1 << 18) + 3}}) {
            std::vector<float> v(n);
            for (size_t i = 0; i < n; ++i) v[i] = value(w, i);
            comm.allreduce(v, algorithm);
            for (size_t i = 0; i < n; ++i) {
              float exact = 0;
              for (int k = 0; k < comm.size(); ++k) exact += value(k, i);
              if (v[i] != exact)
                throw Error(fmt::format("{}: worker {} has {} at {} of {}, not {}", to_string(algorithm), w, v[i],
                                        i, n, exact));
            }
          }
      },
      /*over_gloo=*/true);
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

}  // namespace
}  // namespace ptrain
