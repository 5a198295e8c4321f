#include "topology/thread_places.hpp"

#include <algorithm>

namespace ptrain {

std::vector<int> nodes_with_cpus(const std::vector<CpuSlot>& slots) {
  std::vector<int> nodes;
  for (const CpuSlot& s : slots)
    if (std::find(nodes.begin(), nodes.end(), s.node) == nodes.end()) nodes.push_back(s.node);
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

ThreadPlace thread_place(const std::vector<CpuSlot>& slots, Placement placement, int thread) {
  if (placement == Placement::None || slots.empty() || thread < 0) return {};
  const auto g = static_cast<size_t>(thread);
  auto place = [](const CpuSlot& s) { return ThreadPlace{s.cpu, s.core, s.node}; };
  if (placement == Placement::Compact) return place(slots[g % slots.size()]);
  const std::vector<int> nodes = nodes_with_cpus(slots);
  const int node = nodes[g % nodes.size()];
  std::vector<CpuSlot> own;  // the node's slots, in compact order
  std::copy_if(slots.begin(), slots.end(), std::back_inserter(own), [&](const CpuSlot& s) { return s.node == node; });
  return place(own[(g / nodes.size()) % own.size()]);
}

}  // namespace ptrain
