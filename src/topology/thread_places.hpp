#pragma once
// Which PU, core and NUMA node each thread of a run gets, from a topology's
// slots (topology/topology.hpp) and the placement: a pure function, so that a
// plan for another machine (a synthetic or XML topology) is the same plan.
//
// Thread g (0 up; in MPI ranks, after the threads of the host's lower ranks):
//   compact: slot g of the compact order (every core once, then the second
//            PU of each, ...);
//   spread:  NUMA node g mod N of the N nodes that have PUs, and there slot
//            g / N of that node's compact order;
//   none:    nothing.
// More threads than slots wrap around (round-robin, as the pinning before).
#include <vector>

#include "topology/placement.hpp"
#include "topology/topology.hpp"

namespace ptrain {

struct ThreadPlace {
  int cpu = -1;   // the PU's OS index (-1: not placed)
  int core = -1;  // its core's logical index
  int node = -1;  // its NUMA node's OS index
  bool placed() const { return cpu >= 0; }
  bool operator==(const ThreadPlace&) const = default;
};

ThreadPlace thread_place(const std::vector<CpuSlot>& slots, Placement placement, int thread);

// The NUMA nodes that have PUs, in increasing order.
std::vector<int> nodes_with_cpus(const std::vector<CpuSlot>& slots);

}  // namespace ptrain
