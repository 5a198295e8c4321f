#pragma once
// hwloc's own topology behind a Topology, for the files that call hwloc
// (binding.cpp, topology.cpp); nothing else includes hwloc.h.
#include <hwloc.h>

#include "topology/topology.hpp"

namespace ptrain {

struct Topology::Hwloc {
  hwloc_topology_t topology = nullptr;
  ~Hwloc() {
    if (topology) hwloc_topology_destroy(topology);
  }
};

inline hwloc_topology_t hwloc_of(const Topology& t) { return t.hwloc().topology; }

}  // namespace ptrain
