#pragma once
// A run's placement from its plan (run.placement, run.topology) and world:
// the topology loaded before any work (a file that cannot be read, or a
// description hwloc refuses, is a problem naming run.topology), and the
// Placer the trainer and the shared-memory run bind their threads with.
#include <memory>

#include "core/problems.hpp"
#include "plan/run_plan.hpp"
#include "run/world.hpp"
#include "topology/placer.hpp"

namespace ptrain {

// Null, with the problem added, when run.topology cannot be loaded.
std::shared_ptr<const Topology> load_run_topology(const RunPlan& plan, Problems& problems);

// Threads in MPI ranks begin after those of the host's lower ranks.
Placer run_placer(const RunPlan& plan, std::shared_ptr<const Topology> topology, const World& world);

// The record of what ran: the threads' (the trainer's, or the shared-memory
// run's), or, for ranks of one worker each, which mpirun binds, a note saying so.
PlacementRecord run_placement_record(const Placer& placer, const World& world, PlacementRecord ran);

}  // namespace ptrain
