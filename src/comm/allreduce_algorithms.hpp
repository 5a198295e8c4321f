#pragma once
// All-reduce algorithms written once over a Communicator's point-to-point
// calls, so every backend runs them (seed 001: tree and butterfly structures).
// Each sums `data` over all workers in place; every worker ends with the same
// bits, and the order of the additions depends only on the algorithm and the
// number of workers, never on the backend or on timing.
#include <span>

#include "comm/communicator.hpp"

namespace ptrain {

// Reduce-scatter then all-gather around the ring rank -> rank+1, each of the
// n segments sent in chunks of at most `chunk_floats`: 2(n-1)/n of the data
// leaves each worker, whatever n is.
void ring_allreduce(Communicator& comm, std::span<float> data, size_t chunk_floats = 1 << 18);

// Recursive halving (reduce-scatter) then recursive doubling (all-gather):
// log2(n) rounds each way. With n not a power of two, the first 2r workers
// (r = n - 2^floor(log2 n)) fold in pairs before and unfold after.
void halving_doubling_allreduce(Communicator& comm, std::span<float> data);

// Binomial-tree reduce to rank 0, then binomial-tree broadcast: log2(n)
// rounds each way, the whole buffer at each.
void tree_allreduce(Communicator& comm, std::span<float> data);

// comm.allreduce(data, algorithm): the backend runs its own or one of the above.
void allreduce_with(Communicator& comm, std::span<float> data, AllreduceAlgorithm algorithm);

// For backends: runs one of the algorithms above (not Native).
void run_allreduce_algorithm(Communicator& comm, std::span<float> data, AllreduceAlgorithm algorithm);

}  // namespace ptrain
