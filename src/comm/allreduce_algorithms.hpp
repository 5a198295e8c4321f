#pragma once
// All-reduce algorithms written once over a Communicator's point-to-point
// calls, so every backend runs them (seed 001: tree and butterfly structures).
// Each sums `data` over all workers in place; every worker ends with the same
// bits, and the order of the additions depends only on the algorithm and the
// number of workers, never on the backend or on timing.
//
// The *_half variants sum IEEE halves (core/half.hpp) with the same
// algorithms: each addition is done in fp32 and rounded back to half, a finite
// sum beyond the half range saturating to +-65504 instead of becoming inf.
#include <cstddef>
#include <cstdint>
#include <span>

#include "comm/communicator.hpp"

namespace ptrain {

// Large messages go in chunks of at most this many bytes: the receive buffer
// stays small and cache-hot, and each chunk's addition overlaps the next
// chunk's transfer.
inline constexpr size_t kAllreduceChunkBytes = size_t{1} << 20;

// Reduce-scatter then all-gather around the ring rank -> rank+1, each of the
// n segments sent in chunks of at most `chunk_floats`: 2(n-1)/n of the data
// leaves each worker, whatever n is.
void ring_allreduce(Communicator& comm, std::span<float> data,
                    size_t chunk_floats = kAllreduceChunkBytes / sizeof(float));

// Recursive halving (reduce-scatter) then recursive doubling (all-gather):
// log2(n) rounds each way. With n not a power of two, the first 2r workers
// (r = n - 2^floor(log2 n)) fold in pairs before and unfold after.
void halving_doubling_allreduce(Communicator& comm, std::span<float> data);

// Binomial-tree reduce to rank 0, then binomial-tree broadcast: log2(n)
// rounds each way, the whole buffer at each.
void tree_allreduce(Communicator& comm, std::span<float> data);

// comm.allreduce(data, algorithm): the backend runs its own or one of the above.
void allreduce_with(Communicator& comm, std::span<float> data, AllreduceAlgorithm algorithm);

// For backends: runs one of the algorithms above (not Native). Hierarchical is
// the ring: a backend that calls this has one worker per process, so only the
// level between processes is left.
void run_allreduce_algorithm(Communicator& comm, std::span<float> data, AllreduceAlgorithm algorithm);

// The same, over IEEE halves.
void ring_allreduce_half(Communicator& comm, std::span<uint16_t> data,
                         size_t chunk_halves = kAllreduceChunkBytes / sizeof(uint16_t));
void halving_doubling_allreduce_half(Communicator& comm, std::span<uint16_t> data);
void tree_allreduce_half(Communicator& comm, std::span<uint16_t> data);
// comm.allreduce_half(data, algorithm).
void allreduce_half_with(Communicator& comm, std::span<uint16_t> data, AllreduceAlgorithm algorithm);
// For backends: runs one of the half algorithms above (not Native).
void run_allreduce_half_algorithm(Communicator& comm, std::span<uint16_t> data, AllreduceAlgorithm algorithm);

}  // namespace ptrain
