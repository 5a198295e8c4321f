// The entry check of every collective on the MPI backend, as many ranks as
// mpirun started: a rank that skips a collective is named by every rank that
// waited for it, mismatched sizes and collectives are named on every rank, and
// MPI stays usable for the next communicator. Every rank reaches the same
// verdict: each rank's error goes to all of them over MPI_COMM_WORLD.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <functional>
#include <numeric>

#include "comm/allreduce_algorithms.hpp"
#include "comm/mpi_communicator.hpp"
#include "mpi_test_support.hpp"
#include "comm/allreduce_printing.hpp"

namespace ptrain {

namespace {

std::string collective_name(AllreduceAlgorithm a) {
  return a == AllreduceAlgorithm::Native ? "allreduce" : to_string(a) + " allreduce";
}

// A fresh communicator after a failed one still sums correctly.
void expect_mpi_still_works(AllreduceAlgorithm algorithm) {
  MpiCommunicator comm(std::chrono::seconds(60));
  std::vector<float> v(1001, static_cast<float>(comm.rank() + 1));
  allreduce_with(comm, v, algorithm);
  const float expected = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
  EXPECT_EQ(v, std::vector<float>(v.size(), expected));
  comm.barrier();
}

constexpr auto kShortTimeout = std::chrono::milliseconds(500);

class MpiCollectiveChecks : public ::testing::TestWithParam<AllreduceAlgorithm> {};

TEST_P(MpiCollectiveChecks, RankThatSkipsIsNamedByEveryOther) {
  MpiCommunicator comm = communicator_when_all_arrived(kShortTimeout);
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  const int last = comm.size() - 1;
  const std::string name = collective_name(GetParam());
  std::string error, later;
  if (comm.rank() != last) {  // the last rank never arrives
    std::vector<float> v(10, 1.0f);
    error = error_of([&] { allreduce_with(comm, v, GetParam()); });
    later = error_of([&] { comm.barrier(); });
  }
  const auto errors = from_every_rank(error), laters = from_every_rank(later);
  EXPECT_EQ(errors[static_cast<size_t>(last)], "");
  for (int r = 0; r < last; ++r) {
    const auto& e = errors[static_cast<size_t>(r)];
    EXPECT_EQ(e, fmt::format("{}: timed out after 0.5 s waiting for rank(s) {} (on rank {})", name, last, r));
    // The failed communicator refuses further work at once.
    EXPECT_EQ(laters[static_cast<size_t>(r)],
              "barrier: communicator unusable after an earlier failure: " + e);
  }
  expect_mpi_still_works(GetParam());
}

TEST_P(MpiCollectiveChecks, MismatchedSizesNameBothSizesOnEveryRank) {
  // A long timeout: the sizes are compared on entry, so nobody waits for it.
  MpiCommunicator comm(std::chrono::seconds(60));
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  const std::string name = collective_name(GetParam());
  std::vector<float> v(comm.rank() == 1 ? 500 : 700, 1.0f);
  const auto errors = from_every_rank(error_of([&] { allreduce_with(comm, v, GetParam()); }));
  for (int r = 0; r < comm.size(); ++r)
    EXPECT_EQ(errors[static_cast<size_t>(r)],
              r == 1 ? name + ": rank 1 brought 500 floats but rank 0 brought 700"
                     : fmt::format("{}: rank {} brought 700 floats but rank 1 brought 500", name, r));
  expect_mpi_still_works(GetParam());
}

TEST_P(MpiCollectiveChecks, RankInAnotherCollectiveIsNamed) {
  MpiCommunicator comm(std::chrono::seconds(60));
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  const int last = comm.size() - 1;
  const std::string name = collective_name(GetParam());
  std::vector<float> v(10, 1.0f);
  const auto errors = from_every_rank(error_of([&] {
    if (comm.rank() == last)
      comm.barrier();  // skipped the all-reduce
    else
      allreduce_with(comm, v, GetParam());
  }));
  for (int r = 0; r < last; ++r)
    EXPECT_EQ(errors[static_cast<size_t>(r)],
              fmt::format("{}: rank {} entered barrier while rank {} entered {}", name, last, r, name));
  EXPECT_EQ(errors[static_cast<size_t>(last)],
            fmt::format("barrier: rank 0 entered {} while rank {} entered barrier", name, last));
  expect_mpi_still_works(GetParam());
}

INSTANTIATE_TEST_SUITE_P(All, MpiCollectiveChecks,
                         ::testing::Values(AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring,
                                           AllreduceAlgorithm::HalvingDoubling, AllreduceAlgorithm::Tree),
                         [](const auto& info) { return to_string(info.param); });

TEST(MpiCollectiveErrors, DifferentAlgorithmsAreNamed) {
  MpiCommunicator comm(std::chrono::seconds(60));
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  std::vector<float> v(10, 1.0f);
  const auto errors = from_every_rank(error_of([&] {
    allreduce_with(comm, v, comm.rank() == 0 ? AllreduceAlgorithm::Tree : AllreduceAlgorithm::Ring);
  }));
  EXPECT_EQ(errors[0], "tree allreduce: rank 1 entered ring allreduce while rank 0 entered tree allreduce");
  for (int r = 1; r < comm.size(); ++r)
    EXPECT_EQ(
        errors[static_cast<size_t>(r)],
        fmt::format("ring allreduce: rank 0 entered tree allreduce while rank {} entered ring allreduce", r));
}

TEST(MpiCollectiveErrors, SkippedBarrierNamesTheMissingRank) {
  MpiCommunicator comm = communicator_when_all_arrived(kShortTimeout);
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  const int last = comm.size() - 1;
  std::string error;
  if (comm.rank() != last) error = error_of([&] { comm.barrier(); });
  const auto errors = from_every_rank(error);
  for (int r = 0; r < last; ++r)
    EXPECT_EQ(errors[static_cast<size_t>(r)],
              fmt::format("barrier: timed out after 0.5 s waiting for rank(s) {} (on rank {})", last, r));
  expect_mpi_still_works(AllreduceAlgorithm::Native);
}

TEST(MpiCollectiveErrors, BroadcastRootsAndSizesMustAgree) {
  {
    MpiCommunicator comm(std::chrono::seconds(60));
    if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
    std::vector<std::byte> v(8);
    const auto errors = from_every_rank(error_of([&] { comm.broadcast(v, comm.rank() == 1 ? 1 : 0); }));
    EXPECT_EQ(errors[0], "broadcast: rank 0 named root 0 but rank 1 named root 1");
    EXPECT_EQ(errors[1], "broadcast: rank 1 named root 1 but rank 0 named root 0");
  }
  {
    MpiCommunicator comm(std::chrono::seconds(60));
    std::vector<std::byte> v(comm.rank() == 1 ? 12 : 8);
    const auto errors = from_every_rank(error_of([&] { comm.broadcast(v, 0); }));
    EXPECT_EQ(errors[0], "broadcast: rank 0 brought 8 bytes but rank 1 brought 12");
    EXPECT_EQ(errors[1], "broadcast: rank 1 brought 12 bytes but rank 0 brought 8");
  }
  expect_mpi_still_works(AllreduceAlgorithm::Native);
}

TEST(MpiCollectives, BroadcastAndAllgathervMoveTheBytes) {
  MpiCommunicator comm(std::chrono::seconds(60));
  const int n = comm.size();
  for (int root = 0; root < n; ++root) {
    std::vector<std::byte> v(100, std::byte(comm.rank()));
    comm.broadcast(v, root);
    EXPECT_EQ(v, std::vector<std::byte>(100, std::byte(root)));
  }
  // Rank r brings r bytes of value r (rank 0 brings none).
  const auto all =
      comm.allgatherv(std::vector<std::byte>(static_cast<size_t>(comm.rank()), std::byte(comm.rank())));
  ASSERT_EQ(all.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(all[static_cast<size_t>(r)], std::vector<std::byte>(static_cast<size_t>(r), std::byte(r)));
  comm.barrier();
}

}  // namespace
}  // namespace ptrain
