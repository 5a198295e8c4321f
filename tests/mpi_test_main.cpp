// main() of the tests that run as MPI ranks: every rank runs every test; only
// rank 0 prints the progress, any rank's failure fails the job.
#include <gtest/gtest.h>
#include <mpi.h>

#include "comm/mpi_communicator.hpp"

int main(int argc, char** argv) {
  ptrain::MpiRuntime mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  return RUN_ALL_TESTS();
}
