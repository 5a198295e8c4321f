#include "run/run_placement.hpp"

#include "core/error.hpp"

namespace ptrain {

std::shared_ptr<const Topology> load_run_topology(const RunPlan& plan, Problems& problems) {
  try {
    return Topology::load(plan.run.topology);
  } catch (const Error& e) {
    problems.add("run.topology", std::string(": ") + e.what());
    return nullptr;
  }
}

Placer run_placer(const RunPlan& plan, std::shared_ptr<const Topology> topology, const World& world) {
  return Placer(std::move(topology), plan.run.placement, world.host_slot * world.local_workers);
}

PlacementRecord run_placement_record(const Placer& placer, const World& world, PlacementRecord ran) {
  if (world.backend == Backend::Local || world.local_workers > 1) return ran;
  PlacementRecord record = placer.record();
  record.applied = false;
  record.note = "one worker a rank: mpirun binds the ranks (--bind-to, --map-by)";
  return record;
}

}  // namespace ptrain
