#pragma once
// Pinning worker threads to cores. A synchronous step waits for its slowest
// worker, so a worker that the scheduler moves, or parks beside another on one
// core, holds up every other; pinning worker r to the r-th core keeps each on
// its own (round-robin when there are more workers than cores).
#include <vector>

namespace ptrain {

// The CPUs this process may run on, in increasing order.
std::vector<int> allowed_cpus();

// Pins the calling thread to allowed_cpus()[slot % count]. Returns the CPU, or
// -1 when the system refuses (the thread then runs unpinned).
int pin_current_thread(int slot);

}  // namespace ptrain
