#pragma once
// Workers as threads inside MPI ranks (mpirun ... ptrain --local-workers T):
// thread t of rank r is worker r x T + t of R x T. Each thread's communicator
// joins two levels: the rank's threads share a LocalGroup for what stays in
// the process, and two communicators over the ranks carry the rest (MPI under
// mpirun; in tests, threads standing in for ranks):
//   - `across`: this thread's own, joining thread t of every rank: its slice
//     of a hierarchical all-reduce, and the entry check of every collective;
//   - `mesh`: one communicator over the ranks that every thread of a rank holds
//     a handle on (MpiCommunicator::share), for messages between threads of
//     different ranks; the tag carries the pair of threads (comm/message_tags.hpp).
//
// Every worker reaches every other point-to-point, so ring, hd and tree run
// over it unchanged, with the same bits as on any backend. Hierarchical sums
// within the rank in shared memory (thread order), all-reduces across the
// ranks by ring with thread t owning slice t of the buffer (so every thread
// uses the wire, as two-level rings do), then copies the other slices back
// within the rank: the same bits on every worker, from run to run. Native is
// the same with the across communicator's own all-reduce (MPI_Allreduce)
// between the ranks. Collectives check every worker's entry (comm/
// collective_entry.hpp) within the rank, then between ranks thread by thread,
// and a timeout names the worker that did not arrive, or, across ranks, the
// rank and its workers. recv_any is not supported (no parameter servers here).
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/local_group.hpp"

namespace ptrain {

class HierarchicalCommunicator : public Communicator {
 public:
  // `threads`: this rank's T threads, whose first worker is across.rank() x T;
  // `across` and `mesh` (same size and rank) must outlive this communicator.
  HierarchicalCommunicator(std::shared_ptr<LocalGroup> threads, int thread, Communicator& across,
                           Communicator& mesh);

  int rank() const override { return rank_ * threads_ + thread_; }
  int size() const override { return ranks_ * threads_; }
  std::string backend() const override { return "hierarchical"; }

  void allreduce(std::span<float> data, AllreduceAlgorithm algorithm = AllreduceAlgorithm::Native) override;
  void allreduce_half(std::span<uint16_t> data,
                      AllreduceAlgorithm algorithm = AllreduceAlgorithm::Native) override;
  void broadcast(std::span<std::byte> data, int root) override;
  void barrier() override;
  std::vector<std::vector<std::byte>> allgatherv(std::span<const std::byte> mine) override;
  void send(int peer, int tag, std::span<const std::byte> data) override;
  void recv(int peer, int tag, std::span<std::byte> data) override;
  using Communicator::sendrecv;
  void sendrecv(int to, int send_tag, std::span<const std::byte> out, int from, int recv_tag,
                std::span<std::byte> in) override;
  // Stops this rank's threads and this thread's waits on the other ranks.
  void interrupt(const std::string& reason) override;

 private:
  int worker(int rank, int thread) const { return rank * threads_ + thread; }
  // The tag of a message between thread `from` and thread `to` of two ranks.
  int thread_tag(int tag, int from, int to) const;
  // Checks every worker's entry (this rank's threads in shared memory, then
  // thread t of every rank) and waits until this rank's threads are all past
  // it; publishes `data` in this thread's slot for the collective.
  void enter(const CollectiveEntry& entry, const void* data, size_t bytes);
  // A float or half all-reduce: Ring, HalvingDoubling and Tree over send and
  // recv; Native and Hierarchical in two levels.
  template <typename T>
  void reduce(std::span<T> data, const CollectiveEntry& entry);
  // Runs `call` on the across or mesh communicator; its error comes back
  // naming this worker (its own names ranks), as the same kind of error.
  template <typename Call>
  void between_ranks(const std::string& what, Call&& call);
  void check_peer(int peer) const;

  std::shared_ptr<LocalGroup> group_;
  int thread_, threads_;
  int rank_, ranks_;
  Communicator& across_;
  Communicator& mesh_;
};

}  // namespace ptrain
