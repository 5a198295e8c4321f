#include "topology/placer.hpp"

#include <algorithm>

namespace ptrain {

Placer::Placer(std::shared_ptr<const Topology> topology, Placement policy, int first_thread)
    : topology_(std::move(topology)), policy_(topology_ ? policy : Placement::None), first_thread_(first_thread) {}

bool Placer::binds() const { return policy_ != Placement::None && topology_->is_this_system(); }

ThreadPlace Placer::place(int i) const {
  if (policy_ == Placement::None) return {};
  return thread_place(topology_->slots(), policy_, first_thread_ + i);
}

PlacedThread Placer::bind_current_thread(const std::string& role, int index, int i) const {
  PlacedThread out{role, index, place(i), false};
  if (binds()) out.bound = ptrain::bind_current_thread(*topology_, out.place);
  return out;
}

AllocationPolicy Placer::allocations_near(int i) const {
  if (!binds()) return AllocationPolicy();
  return AllocationPolicy(*topology_, {place(i).node});
}

std::vector<int> Placer::shared_nodes(int threads) const {
  std::vector<int> nodes;
  if (policy_ == Placement::None || threads < 1) return nodes;
  for (int i = 0; i < (policy_ == Placement::Compact ? 1 : threads); ++i)
    if (const int n = place(i).node; n >= 0 && std::find(nodes.begin(), nodes.end(), n) == nodes.end())
      nodes.push_back(n);
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

AllocationPolicy Placer::allocations_for_shared(int threads) const {
  if (!binds()) return AllocationPolicy();
  return AllocationPolicy(*topology_, shared_nodes(threads));
}

PlacementRecord Placer::record(std::vector<PlacedThread> threads) const {
  PlacementRecord r;
  r.policy = policy_;
  r.threads = std::move(threads);
  if (!topology_) return r;
  r.topology = topology_->description();
  r.numa_nodes = topology_->numa_nodes();
  r.cores = topology_->cores();
  r.applied = binds();
  return r;
}

}  // namespace ptrain
