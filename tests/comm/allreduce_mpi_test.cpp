// Every all-reduce algorithm on the MPI backend, as many ranks as mpirun
// started: against the exact sum, and bit for bit against the same algorithm
// on the local (threads) backend. (Their errors: collective_checks_mpi_test.cpp.)
#include <gtest/gtest.h>

#include <thread>

#include "comm/allreduce_algorithms.hpp"
#include "comm/local_group.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/rng.hpp"
#include "comm/allreduce_printing.hpp"

namespace ptrain {

namespace {

std::vector<float> rank_data(int rank, size_t n) {
  Rng rng(1000 + static_cast<uint64_t>(rank));
  std::vector<float> v(n);
  for (auto& x : v) x = rng.uniform() * 2 - 1;
  return v;
}

// The same algorithm over threads, for the given number of workers (rank 0's result).
std::vector<float> local_result(int workers, size_t n, AllreduceAlgorithm algorithm) {
  auto group = std::make_shared<LocalGroup>(workers);
  std::vector<float> result;
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r)
    threads.emplace_back([&, r] {
      LocalCommunicator comm(group, r);
      auto v = rank_data(r, n);
      allreduce_with(comm, v, algorithm);
      if (r == 0) result = v;
    });
  for (auto& t : threads) t.join();
  return result;
}

class MpiAllreduce : public ::testing::TestWithParam<AllreduceAlgorithm> {};

TEST_P(MpiAllreduce, SumsAndMatchesTheLocalBackendBitForBit) {
  MpiCommunicator comm(std::chrono::seconds(60));
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000003}}) {
    auto v = rank_data(comm.rank(), n);
    allreduce_with(comm, v, GetParam());
    std::vector<double> expected(n, 0.0);
    for (int r = 0; r < comm.size(); ++r) {
      auto x = rank_data(r, n);
      for (size_t i = 0; i < n; ++i) expected[i] += x[i];
    }
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(v[i], expected[i], 1e-5) << "n " << n << " i " << i;
    // The summation order is the algorithm's, not the backend's. (The local
    // native all-reduce is a different algorithm from MPI_Allreduce.)
    // Hierarchical with one worker per rank is the ring between the ranks
    // (on threads alone it is the shared-memory sum).
    if (GetParam() != AllreduceAlgorithm::Native) {
      const AllreduceAlgorithm same =
          GetParam() == AllreduceAlgorithm::Hierarchical ? AllreduceAlgorithm::Ring : GetParam();
      EXPECT_EQ(v, local_result(comm.size(), n, same)) << "n " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, MpiAllreduce,
                         ::testing::Values(AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring,
                                           AllreduceAlgorithm::HalvingDoubling, AllreduceAlgorithm::Tree,
                                           AllreduceAlgorithm::Hierarchical),
                         [](const auto& info) { return to_string(info.param); });

}  // namespace
}  // namespace ptrain
