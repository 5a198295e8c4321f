#pragma once
// What a run's placement was, for its report and summary: the policy, the
// topology, where each thread went and whether it was bound or only planned.
#include <string>
#include <vector>

#include "topology/placement.hpp"
#include "topology/thread_places.hpp"

namespace ptrain {

struct PlacedThread {
  std::string role;  // "worker", "shard" (a parameter-server shard) or "thread" (shared memory)
  int index = 0;     // the worker's rank, the shard's or the thread's number
  ThreadPlace place;  // as planned (not placed: none)
  bool bound = false; // this machine bound its CPU and memory as planned
};

struct PlacementRecord {
  Placement policy = Placement::None;
  std::string topology;  // Topology::description()
  int numa_nodes = 0, cores = 0;
  bool applied = false;  // threads bound on this machine, not only planned
  std::string note;      // what was left to others (mpirun binds one-worker ranks)
  std::vector<PlacedThread> threads;  // this process's
  // The shared-memory strategies: the nodes the shared parameters were
  // allocated on (several: interleaved), empty when not placed.
  std::vector<int> shared_nodes;
};

// One line for the run's summary: "spread on synthetic 'pack:2 node:1 core:2
// pu:1' (2 NUMA nodes, 4 cores), planned, not bound: worker 0 cpu 0 node 0, ...".
std::string placement_summary(const PlacementRecord& record);

}  // namespace ptrain
