#include "topology/binding.hpp"

#include "topology/hwloc_handle.hpp"

namespace ptrain {

namespace {

// A set of NUMA nodes by their OS indexes, freed when it goes.
struct NodeSet {
  hwloc_nodeset_t set = hwloc_bitmap_alloc();
  NodeSet() = default;
  explicit NodeSet(const std::vector<int>& nodes) {
    for (int n : nodes)
      if (n >= 0) hwloc_bitmap_set(set, static_cast<unsigned>(n));
  }
  ~NodeSet() { hwloc_bitmap_free(set); }
  NodeSet(const NodeSet&) = delete;
  NodeSet& operator=(const NodeSet&) = delete;
  std::vector<int> indexes() const {
    std::vector<int> out;
    for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) out.push_back(i);
    return out;
  }
};

std::string policy_name(hwloc_membind_policy_t policy) {
  switch (policy) {
    case HWLOC_MEMBIND_DEFAULT: return "default";
    case HWLOC_MEMBIND_FIRSTTOUCH: return "firsttouch";
    case HWLOC_MEMBIND_BIND: return "bind";
    case HWLOC_MEMBIND_INTERLEAVE: return "interleave";
    case HWLOC_MEMBIND_MIXED: return "mixed";
    default: return "unknown";
  }
}

constexpr int kNodes = HWLOC_MEMBIND_BYNODESET;

}  // namespace

bool bind_current_thread(const Topology& topology, const ThreadPlace& place) {
  if (!topology.is_this_system() || !place.placed()) return false;
  hwloc_topology_t t = hwloc_of(topology);
  const hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t, static_cast<unsigned>(place.cpu));
  if (!pu) return false;
  const bool cpu = hwloc_set_cpubind(t, pu->cpuset, HWLOC_CPUBIND_THREAD) == 0;
  const NodeSet node({place.node});
  const bool memory =
      place.node >= 0 && hwloc_set_membind(t, node.set, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_THREAD | kNodes) == 0;
  return cpu && memory;
}

AllocationPolicy::AllocationPolicy(const Topology& topology, const std::vector<int>& nodes) {
  if (!topology.is_this_system() || nodes.empty()) return;
  hwloc_topology_t t = hwloc_of(topology);
  NodeSet before;
  hwloc_membind_policy_t policy = HWLOC_MEMBIND_DEFAULT;
  if (hwloc_get_membind(t, before.set, &policy, HWLOC_MEMBIND_THREAD | kNodes) != 0) policy = HWLOC_MEMBIND_DEFAULT;
  const NodeSet wanted(nodes);
  const auto kind = nodes.size() == 1 ? HWLOC_MEMBIND_BIND : HWLOC_MEMBIND_INTERLEAVE;
  if (hwloc_set_membind(t, wanted.set, kind, HWLOC_MEMBIND_THREAD | kNodes) != 0) return;
  topology_ = &topology;
  applied_ = true;
  previous_nodes_ = before.indexes();
  previous_policy_ = policy;
}

AllocationPolicy::~AllocationPolicy() {
  if (!applied_) return;
  hwloc_topology_t t = hwloc_of(*topology_);
  const auto policy = static_cast<hwloc_membind_policy_t>(previous_policy_);
  const NodeSet before(previous_nodes_);
  // The thread's policy as it was; where that cannot be said again, the system's default.
  if (policy == HWLOC_MEMBIND_MIXED || previous_nodes_.empty() ||
      hwloc_set_membind(t, before.set, policy, HWLOC_MEMBIND_THREAD | kNodes) != 0)
    hwloc_set_membind(t, hwloc_topology_get_topology_nodeset(t), HWLOC_MEMBIND_DEFAULT,
                      HWLOC_MEMBIND_THREAD | kNodes);
}

std::vector<int> current_thread_cpus(const Topology& topology) {
  std::vector<int> out;
  if (!topology.is_this_system()) return out;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (hwloc_get_cpubind(hwloc_of(topology), set, HWLOC_CPUBIND_THREAD) == 0)
    for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) out.push_back(i);
  hwloc_bitmap_free(set);
  return out;
}

MemoryBinding current_thread_memory(const Topology& topology) {
  if (!topology.is_this_system()) return {};
  NodeSet set;
  hwloc_membind_policy_t policy = HWLOC_MEMBIND_DEFAULT;
  if (hwloc_get_membind(hwloc_of(topology), set.set, &policy, HWLOC_MEMBIND_THREAD | kNodes) != 0)
    return {{}, "unknown"};
  return {set.indexes(), policy_name(policy)};
}

MemoryBinding area_memory(const Topology& topology, const void* data, size_t bytes) {
  if (!topology.is_this_system() || bytes == 0) return {};
  NodeSet set;
  hwloc_membind_policy_t policy = HWLOC_MEMBIND_DEFAULT;
  if (hwloc_get_area_membind(hwloc_of(topology), data, bytes, set.set, &policy, kNodes) != 0) return {{}, "unknown"};
  return {set.indexes(), policy_name(policy)};
}

std::vector<int> area_location(const Topology& topology, const void* data, size_t bytes) {
  if (!topology.is_this_system() || bytes == 0) return {};
  NodeSet set;
  if (hwloc_get_area_memlocation(hwloc_of(topology), data, bytes, set.set, kNodes) != 0) return {};
  return set.indexes();
}

}  // namespace ptrain
