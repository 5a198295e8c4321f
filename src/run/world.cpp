#include "run/world.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <span>
#include <thread>

#include "comm/gloo_communicator.hpp"
#include "comm/mpi_transport.hpp"
#include "core/error.hpp"
#include "core/run_failure.hpp"

namespace ptrain {

std::string World::description() const {
  std::string text =
      backend != Backend::Mpi ? fmt::format("local backend: {} workers as threads", workers)
      : local_workers > 1
          ? fmt::format("mpi backend (started by mpirun): {} ranks x {} worker threads ({} workers)",
                        workers / local_workers, local_workers, workers)
          : fmt::format("mpi backend (started by mpirun): {} ranks, one worker each", workers);
  if (servers > 0)
    text += fmt::format(" and {} server shard {}(s)", servers, backend == Backend::Mpi ? "rank" : "thread");
  if (backend == Backend::Mpi) text += "; " + transport;
  return text;
}

namespace {

// How many lower ranks run on this host (every rank calls it): which of the
// host's GPUs this rank takes, and where on its cores its worker threads go.
int host_slot(Communicator& ranks) {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  const std::string mine(name);
  const auto all = ranks.allgatherv(std::as_bytes(std::span(mine.data(), mine.size())));
  int slot = 0;
  for (int r = 0; r < ranks.rank(); ++r) {
    const auto& theirs = all[static_cast<size_t>(r)];
    if (std::string(reinterpret_cast<const char*>(theirs.data()), theirs.size()) == mine) ++slot;
  }
  return slot;
}

}  // namespace

// Its refusals come before the ranks exchange anything but their count, and
// every rank finds the same: PlanError, so that each ends on its own.
World make_world(const RunPlan& plan) {
  const RunControls& run = plan.run;
  const bool under_mpirun = launched_by_mpi();
  World world;
  world.servers = servers_of(plan.strategy);
  world.backend = run.backend == Backend::Auto ? (under_mpirun ? Backend::Mpi : Backend::Local) : run.backend;
  const std::string strategy(StrategyRegistry::name_of(plan.strategy));
  if (world.backend == Backend::Mpi && !under_mpirun)
    throw PlanError("run.backend mpi: this process was not started by mpirun");
  if (world.backend == Backend::Local && under_mpirun)
    throw PlanError("run.backend local: under mpirun every rank would run all the workers; use backend mpi or auto");
  if (world.backend == Backend::Local && run.transport == Transport::Gloo)
    throw PlanError("run.transport gloo: carries MPI ranks' all-reduces, so it needs mpirun; threads of one process share "
                "memory instead");
  if (world.backend == Backend::Local && run.local_workers > 1)
    throw PlanError(fmt::format("run.local_workers {}: runs worker threads inside MPI ranks, so it needs mpirun; on threads "
                            "alone the workers are run.workers",
                            run.local_workers));
  if (world.backend == Backend::Local) {
    world.transport = "threads of one process (no network)";
    world.workers = run.workers > 0 ? run.workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // Each worker and shard is a thread with a model replica; past this a
    // process runs out of threads or memory before training (std::system_error
    // or std::bad_alloc, not an error that says why).
    if (world.workers > kMaxThreads)
      throw PlanError(fmt::format("run.workers {}: more threads than the {} one process runs (more workers run as MPI "
                              "ranks under mpirun)",
                              world.workers, kMaxThreads));
    if (world.workers + world.servers > kMaxThreads)
      throw PlanError(fmt::format("strategy.servers {}: with {} workers, more threads than the {} one process runs",
                              world.servers, world.workers, kMaxThreads));
    return world;
  }
  if (!distributed(plan.strategy))
    throw PlanError(fmt::format("strategy {}: runs its workers as threads of one process only, not as MPI ranks "
                            "(run it without mpirun)",
                            strategy));
  if (run.transport == Transport::Gloo && !gloo_available())
    throw PlanError("run.transport gloo: this ptrain was built without Gloo (install libgloo-dev and build it again)");
  const bool gloo = run.transport == Transport::Gloo ||
                    (run.transport == Transport::Auto && !mpi_by_default(plan.strategy) && gloo_by_default());
  const MpiTransport* transport = mpi_transport_in_use();
  world.transport = transport ? transport->description : "MPI initialised by the caller: its transport as MPI chose";
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(run.comm_timeout * 1000));
  if (run.local_workers > 1 && !runs_local_workers(plan.strategy))
    throw PlanError(fmt::format("run.local_workers {}: the {} strategy runs one worker per MPI rank (worker threads in "
                            "ranks: hybrid)",
                            run.local_workers, strategy));
  if (run.local_workers > 1 && !MpiRuntime::threads_multiple())
    throw PlanError(fmt::format("run.local_workers {}: worker threads in a rank call MPI at once, and this MPI library "
                            "did not give MPI_THREAD_MULTIPLE",
                            run.local_workers));
  world.ranks = std::make_unique<MpiCommunicator>(timeout);
  world.local_workers = run.local_workers;
  world.workers = (world.ranks->size() - world.servers) * world.local_workers;
  if (world.workers < 1)
    throw PlanError(fmt::format("strategy.servers {}: mpirun started {} ranks, which leaves no worker (start W + S ranks)",
                            world.servers, world.ranks->size()));
  if (run.workers > 0 && run.workers != world.workers && world.local_workers > 1)
    throw PlanError(fmt::format("run.workers {} does not match the {} workers mpirun started ({} ranks x {} threads: under "
                            "mpirun the workers are the ranks times run.local_workers)",
                            run.workers, world.workers, world.ranks->size(), world.local_workers));
  if (run.workers > 0 && run.workers != world.workers)
    throw PlanError(fmt::format("run.workers {} does not match the {} worker ranks mpirun started (under mpirun the "
                            "workers are the ranks{})",
                            run.workers, world.workers, world.servers > 0 ? ", less the servers" : ""));
  // Every rank makes them in the same order: each is a collective.
  world.links = make_worker_links(world.local_workers, gloo, timeout);
  if (gloo) world.transport += "; all-reduces over gloo's TCP transport on " + gloo_interface_in_use();
  if (world.servers > 0) world.worker_ranks = world.ranks->split(world.rank() < world.workers ? 0 : 1);
  world.host_slot = host_slot(*world.ranks);
  return world;
}

}  // namespace ptrain
