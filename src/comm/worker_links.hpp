#pragma once
// The communicators over the MPI ranks that a rank's workers train on,
// besides the one every rank holds for the run itself: with T worker threads
// (run.local_workers), each thread's own `across` communicator and its handle
// on the `mesh` they share (comm/hierarchical_communicator.hpp); with one
// worker a rank and Gloo's transport, the workers' communicator, whose
// all-reduces go over Gloo (comm/gloo_communicator.hpp). With one worker a
// rank over MPI, none: the run's own communicator serves.
#include <chrono>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mpi_communicator.hpp"

namespace ptrain {

struct WorkerLinks {
  std::vector<std::unique_ptr<Communicator>> across;  // over Gloo with over_gloo
  std::vector<std::unique_ptr<MpiCommunicator>> mesh;
  std::unique_ptr<Communicator> gloo_ranks;
};

// Collective: every rank calls it with the same arguments, in the same order
// as its other communicators. Throws ptrain::Error as the communicators'
// construction does (a rank that does not arrive, Gloo missing or unable to
// connect).
WorkerLinks make_worker_links(int local_workers, bool over_gloo, std::chrono::milliseconds timeout);

}  // namespace ptrain
