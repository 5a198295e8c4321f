#pragma once
// A run's placement at work: the topology, the policy and where this
// process's threads begin among the host's (threads in MPI ranks start after
// those of the host's lower ranks). The trainer and the shared-memory run ask
// it where thread i goes, bind each thread there as it starts, and build each
// replica, and the shared parameters, under the memory policy of the
// thread(s) that will use them, so that the first touch of their pages lands
// on the right node. A default Placer places nothing.
#include <memory>
#include <string>
#include <vector>

#include "topology/binding.hpp"
#include "topology/placement.hpp"
#include "topology/placement_record.hpp"
#include "topology/thread_places.hpp"
#include "topology/topology.hpp"

namespace ptrain {

class Placer {
 public:
  Placer() = default;
  Placer(std::shared_ptr<const Topology> topology, Placement policy, int first_thread = 0);

  Placement policy() const { return policy_; }
  // Threads are bound, not only planned: a policy other than none on this machine.
  bool binds() const;
  // Where thread i of this process goes (workers first, then shards).
  ThreadPlace place(int i) const;
  // Binds the calling thread as thread i; what was planned and granted.
  PlacedThread bind_current_thread(const std::string& role, int index, int i) const;
  // While the result lives, the calling thread's allocations go to thread i's node.
  AllocationPolicy allocations_near(int i) const;
  // The nodes for parameters shared by threads 0..threads-1: compact, thread
  // 0's (where the first of them run); spread, every node they use, the pages
  // interleaved so that no node's memory serves all of them.
  std::vector<int> shared_nodes(int threads) const;
  AllocationPolicy allocations_for_shared(int threads) const;
  // The record of a run's placement: the policy, the topology and its
  // counts, and the threads as they were bound.
  PlacementRecord record(std::vector<PlacedThread> threads = {}) const;

 private:
  std::shared_ptr<const Topology> topology_;
  Placement policy_ = Placement::None;
  int first_thread_ = 0;
};

}  // namespace ptrain
