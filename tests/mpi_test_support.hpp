#pragma once
// Helpers for the tests that run as MPI ranks (*_mpi_test.cpp).
#include <mpi.h>

#include <chrono>

#include "comm/mpi_communicator.hpp"

namespace ptrain {

// A communicator with a short timeout, made once every rank has arrived: its
// own setup (a collective under that timeout) must not fail because a loaded
// machine ran one rank late, as a test of the timeout itself then hangs.
inline MpiCommunicator communicator_when_all_arrived(std::chrono::milliseconds timeout) {
  MPI_Barrier(MPI_COMM_WORLD);
  return MpiCommunicator(timeout);
}

}  // namespace ptrain
