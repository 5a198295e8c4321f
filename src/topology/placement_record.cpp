#include "topology/placement_record.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ptrain {

namespace {

constexpr size_t kThreadsListed = 8;  // the report lists every one

std::string state_of(const PlacementRecord& r) {
  if (r.policy == Placement::None) return "threads not bound";
  if (!r.note.empty()) return r.note;
  if (!r.applied) return "planned, not bound (not this machine)";
  for (const PlacedThread& t : r.threads)
    if (!t.bound) return "bound where the system let it";
  return "bound";
}

}  // namespace

std::string placement_summary(const PlacementRecord& r) {
  std::string out = fmt::format("{} on {} ({} NUMA node{}, {} core{}), {}", enum_name(r.policy), r.topology,
                                r.numa_nodes, r.numa_nodes == 1 ? "" : "s", r.cores, r.cores == 1 ? "" : "s",
                                state_of(r));
  if (r.policy == Placement::None) return out;
  for (size_t i = 0; i < r.threads.size() && i < kThreadsListed; ++i) {
    const PlacedThread& t = r.threads[i];
    out += fmt::format("{} {} {} cpu {} node {}", i == 0 ? ":" : ",", t.role, t.index, t.place.cpu, t.place.node);
  }
  if (r.threads.size() > kThreadsListed) out += fmt::format(", ... ({} threads)", r.threads.size());
  if (r.shared_nodes.size() == 1) out += fmt::format("; shared parameters on node {}", r.shared_nodes[0]);
  if (r.shared_nodes.size() > 1)
    out += fmt::format("; shared parameters interleaved over nodes {}", fmt::join(r.shared_nodes, ","));
  return out;
}

}  // namespace ptrain
