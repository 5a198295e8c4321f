#pragma once
// The memory a process of this machine can have: the physical memory, or less
// where a cgroup or an address-space limit says so. Counts in a plan or on a
// command line (a batch, hidden widths, workers, message sizes) are checked
// against it before anything is allocated, so that a count no memory holds is
// refused naming it instead of ending in std::bad_alloc or the OOM killer. The
// checks compare lower bounds of what a run needs with the whole memory, not
// with what happens to be free: what they refuse can never run here, and what
// they accept does not depend on the moment.
#include <cstdint>
#include <optional>
#include <string>

namespace ptrain {

// The physical memory, capped by the cgroup's memory limit and RLIMIT_AS.
uint64_t memory_size_bytes();

// "12.5 GiB": a byte count for messages.
std::string gib_text(double bytes);
// "931 B", "561.0 KiB", "152.9 MiB", "1.2 GiB": a byte count in the unit that suits it.
std::string size_text(double bytes);

// Nothing when `bytes` fit in memory_size_bytes(); else why not, to follow
// "need" or "needs": "36.4 GiB, more than the 23.5 GiB of memory this machine has".
std::optional<std::string> beyond_memory(double bytes);

}  // namespace ptrain
