#pragma once
// The CPUs this process may run on, as the scheduler says (sched_getaffinity):
// a local group with more workers than these sleeps instead of spinning.
// Placing threads on cores and NUMA nodes is topology/placer.hpp's.
#include <vector>

namespace ptrain {

// The CPUs this process may run on, in increasing order.
std::vector<int> allowed_cpus();

}  // namespace ptrain
