#pragma once
// One worker's handle on the group it trains with. Backends (threads in one
// process, MPI ranks) implement the primitives; every call is collective unless
// it says otherwise, and every wait ends in an error after the timeout. Before
// any data moves, every collective checks that all workers entered it with the
// same element count (comm/collective_entry.hpp): a worker that never arrives,
// brings another size or entered another collective is named in the error.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ptrain {

enum class AllreduceAlgorithm {
  Native,           // the backend's own: shared-memory reduction for threads
  Ring,             // reduce-scatter then all-gather around a ring, in chunks
  HalvingDoubling,  // recursive halving, then doubling (the "butterfly")
  Tree,             // binomial-tree reduce to rank 0, then broadcast
  // Two levels: the workers that share a process reduce in shared memory, the
  // processes all-reduce by ring (each thread of a process its own slice of
  // the buffer), and the result is spread back in shared memory. Threads in
  // one process: the shared-memory sum alone (native's bits); one worker per
  // MPI rank: the ring (comm/hierarchical_communicator.hpp has both levels).
  Hierarchical,
};

// "native", "ring", "hd", "tree", "hierarchical"; throws ptrain::Error naming the value otherwise.
AllreduceAlgorithm parse_allreduce_algorithm(const std::string& name);
std::string to_string(AllreduceAlgorithm algorithm);

// Bytes this worker moved to and from its peers since construction.
struct CommStats {
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t collectives = 0;
};

// A message of any size, and who sent it (Communicator::recv_any).
struct AnyMessage {
  int from = -1;
  std::vector<std::byte> bytes;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;

  // Sums `data` over all workers, in place, with the backend's own algorithm or
  // one of comm/allreduce_algorithms.hpp. Every worker passes the same size.
  virtual void allreduce(std::span<float> data,
                         AllreduceAlgorithm algorithm = AllreduceAlgorithm::Native) = 0;
  // Sums IEEE halves (binary16 bit patterns, core/half.hpp) over all workers,
  // in place: gradients all-reduced in compressed form (the fp16 codec). Each
  // addition is done in fp32 and rounded back to half; a finite sum beyond the
  // half range saturates to +-65504 instead of becoming inf; inf stays inf, and
  // a NaN sum is the quiet NaN 0x7e00 (core/half.hpp: add_halves_saturating).
  // Both backends implement it with their entry check, as a collective of its
  // own ("fp16 allreduce"); this default, for wrappers, runs the algorithm (ring
  // for Native) straight over send/recv, without an entry check.
  virtual void allreduce_half(std::span<uint16_t> data,
                              AllreduceAlgorithm algorithm = AllreduceAlgorithm::Native);
  // Copies root's bytes into every other worker's `data` (same size everywhere).
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  virtual void barrier() = 0;
  // Every worker's bytes (of any size, empty too), in rank order, on every worker.
  virtual std::vector<std::vector<std::byte>> allgatherv(std::span<const std::byte> mine);

  // Point-to-point, on which the algorithms in comm/ are written once for every
  // backend. send() may return before the peer receives. recv() fails with an
  // error naming the peer when nothing arrives within the timeout, or when the
  // message has another size than `data`. Messages between two workers with the
  // same tag arrive in the order they were sent.
  virtual void send(int peer, int tag, std::span<const std::byte> data) = 0;
  virtual void recv(int peer, int tag, std::span<std::byte> data) = 0;
  // Sends to one peer and receives from another without deadlock, each
  // direction with its own tag (as MPI_Sendrecv: the hierarchical backend
  // carries a message's thread pair in its tag, which then differs each way).
  virtual void sendrecv(int to, int send_tag, std::span<const std::byte> out, int from, int recv_tag,
                        std::span<std::byte> in) {
    send(to, send_tag, out);
    recv(from, recv_tag, in);
  }
  void sendrecv(int to, std::span<const std::byte> out, int from, std::span<std::byte> in, int tag) {
    sendrecv(to, tag, out, from, tag, in);
  }
  // Receives the next message with `tag` from any peer, whatever its size
  // (empty too): what a parameter server needs, which cannot know who pushes
  // next. Returns std::nullopt when none arrives within `wait` (0: only what is
  // already there), so that the caller can say which peers it was waiting for.
  // Messages from one peer with one tag still arrive in the order they were
  // sent; among peers, the one sent first comes first (local backend: in the
  // order send() was called; MPI: MPI's matching order). Throws ptrain::Error
  // if the group was aborted (local) or the communicator failed earlier (MPI).
  // This default, for wrappers, throws: no backend-neutral way to implement it.
  virtual std::optional<AnyMessage> recv_any(int tag, std::chrono::milliseconds wait);

  // How this rank waits for a message. In a collective every rank moves data
  // at once, and MPI moves it only while polled, so waits spin (the default).
  // A parameter server's ranks mostly wait on each other (workers queue at a
  // shard, a shard waits for pushes), so they nap between polls and leave the
  // shared cores to the rank that has work. The local backend's waits block
  // anyway and ignore this.
  enum class Waiting { Spin, Nap };
  virtual void set_waiting(Waiting) {}

  // From another thread: ends this worker's waits, now and later, with an
  // error that says `reason`, instead of at the timeout. A worker thread of an
  // MPI rank that fails stops its siblings this way, which may be waiting on
  // other ranks (comm/hierarchical_communicator.hpp). The local backend aborts
  // its whole group.
  virtual void interrupt(const std::string& reason) { static_cast<void>(reason); }

  const CommStats& stats() const { return stats_; }

 protected:
  // An all-reduce of `bytes` on every worker by a backend's own algorithm,
  // counted as a ring moves it: 2(n-1)/n of the bytes out and as many in.
  void count_allreduce_traffic(size_t bytes);

  CommStats stats_;
};

}  // namespace ptrain
