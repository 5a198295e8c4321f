#pragma once
// One worker's handle on the group it trains with. Backends (threads in one
// process, MPI ranks) implement the primitives; every call is collective unless
// it says otherwise, and every wait ends in an error after the timeout.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ptrain {

enum class AllreduceAlgorithm {
  Native,  // the backend's own: shared-memory reduction for threads
};

// Bytes this worker moved to and from its peers since construction.
struct CommStats {
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t collectives = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;

  // Sums `data` over all workers, in place. Every worker passes the same size.
  virtual void allreduce(std::span<float> data,
                         AllreduceAlgorithm algorithm = AllreduceAlgorithm::Native) = 0;
  // Copies root's bytes into every other worker's `data` (same size everywhere).
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  virtual void barrier() = 0;

  const CommStats& stats() const { return stats_; }

 protected:
  CommStats stats_;
};

}  // namespace ptrain
