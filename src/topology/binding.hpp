#pragma once
// Binding the calling thread, and the memory it allocates, to a place on this
// machine, through hwloc; and asking the system where a thread and its memory
// are bound (what the tests and the report check). On a topology that is not
// this machine's nothing is bound and nothing is asked.
#include <cstddef>
#include <string>
#include <vector>

#include "topology/thread_places.hpp"
#include "topology/topology.hpp"

namespace ptrain {

// Binds the calling thread to `place`'s PU and its later allocations to the
// PU's NUMA node (hwloc's BIND, not strict: when the node is full, memory
// comes from another rather than not at all). True when both were granted.
bool bind_current_thread(const Topology& topology, const ThreadPlace& place);

// While it lives, the calling thread's allocations go to `nodes` (one: bound
// to it; several: interleaved page by page over them); then as before. An
// empty set, or a topology that is not this machine's, changes nothing.
class AllocationPolicy {
 public:
  AllocationPolicy() = default;
  AllocationPolicy(const Topology& topology, const std::vector<int>& nodes);
  ~AllocationPolicy();
  AllocationPolicy(const AllocationPolicy&) = delete;
  AllocationPolicy& operator=(const AllocationPolicy&) = delete;
  // Whether the system took it.
  bool applied() const { return applied_; }

 private:
  const Topology* topology_ = nullptr;
  bool applied_ = false;
  std::vector<int> previous_nodes_;
  int previous_policy_ = 0;
};

// What this machine says of a binding: the OS indexes it covers and hwloc's
// policy ("bind", "interleave", "firsttouch", "default", "mixed", "unknown").
struct MemoryBinding {
  std::vector<int> nodes;
  std::string policy;
};
// The CPUs the calling thread may run on.
std::vector<int> current_thread_cpus(const Topology& topology);
// Where the calling thread's allocations go.
MemoryBinding current_thread_memory(const Topology& topology);
// The policy of `bytes` at `data`, and the nodes its pages are on (touched ones).
MemoryBinding area_memory(const Topology& topology, const void* data, size_t bytes);
std::vector<int> area_location(const Topology& topology, const void* data, size_t bytes);

}  // namespace ptrain
