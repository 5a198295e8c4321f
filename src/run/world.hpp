#pragma once
// Where a run's workers live: threads of this process (local), or the ranks
// mpirun started (mpi), each with its role: worker r, or, with parameter
// servers, shard s on the last S ranks; or T worker threads in each rank
// (run.local_workers), thread t of rank r being worker r x T + t.
#include <memory>
#include <string>
#include <vector>

#include "comm/mpi_communicator.hpp"
#include "comm/worker_links.hpp"
#include "plan/run_plan.hpp"

namespace ptrain {

struct World {
  Backend backend = Backend::Local;  // never Auto once made
  int workers = 0;
  int servers = 0;
  int local_workers = 1;  // MPI: worker threads in each rank
  // This process's place among the ranks on its host (0 on threads): a
  // rank's GPU under --device cuda, and the cores its worker threads take
  // when mpirun leaves the ranks of a host unbound.
  int host_slot = 0;
  // MPI only: every rank, and the worker ranks alone (with servers).
  std::unique_ptr<MpiCommunicator> ranks, worker_ranks;
  // MPI: the worker threads' communicators over the ranks, or the workers'
  // own over Gloo (comm/worker_links.hpp).
  WorkerLinks links;
  // Where the workers' messages go: "threads of one process (no network)", or
  // the MPI transport chosen before MPI_Init (comm/mpi_transport.hpp).
  std::string transport;

  int rank() const { return ranks ? ranks->rank() : 0; }
  // The communicator of a run with one worker per rank and no servers.
  Communicator& worker_group() const { return links.gloo_ranks ? *links.gloo_ranks : *ranks; }
  bool is_server() const { return ranks && rank() >= workers; }
  // The one process that prints and writes: the local process, or rank 0.
  bool reports() const { return rank() == 0; }
  // Where worker `worker`'s replica computes among this host's GPUs: threads
  // by their worker index, ranks by their place on their host.
  int device_slot(int worker) const {
    return backend == Backend::Local ? worker : host_slot * local_workers + worker % local_workers;
  }
  // "local backend: 4 workers as threads", "mpi backend (started by mpirun): 4 ranks, one worker each;
  // one host: shared memory only (...)", "mpi backend (started by mpirun): 2 ranks x 2 worker threads (4
  // workers); ...".
  std::string description() const;
};

// The most threads (workers and server shards) a run on the local backend has.
constexpr int kMaxThreads = 1024;

// Resolves run.backend and run.workers (0: one per core, or the ranks mpirun
// started less the servers, times run.local_workers) and checks them against
// the strategy: a strategy that runs only as threads is refused under mpirun
// at once, as are more workers than ranks, worker threads in ranks without
// mpirun, and more than kMaxThreads threads. Throws ptrain::Error naming the
// plan's field.
World make_world(const RunPlan& plan);

}  // namespace ptrain
