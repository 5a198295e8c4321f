#pragma once
// Workers as MPI ranks (processes, possibly on several hosts) under mpirun.
// Native all-reduce is MPI_Allreduce (of halves: with a user-defined MPI_Op
// that adds in fp32 and rounds back to half); the algorithms in comm/ run over
// the point-to-point calls. Every call waits on non-blocking MPI requests with a
// deadline, so a rank that never arrives is an error naming it, not a hang;
// when a wait in MPI's collective or for a peer times out, a roll call
// (comm/mpi_roll_call.hpp) names the ranks that stopped answering: the peer
// may wait in turn for a rank that stopped.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "comm/collective_entry.hpp"
#include "comm/communicator.hpp"
#include "comm/mpi_transport.hpp"

namespace ptrain {

// True when this process was started by mpirun / an MPI launcher.
bool launched_by_mpi();

// MPI_Init_thread on construction and MPI_Finalize on destruction (once per
// process). Before MPI_Init it chooses the network the ranks may use
// (comm/mpi_transport.hpp: shared memory only when all ranks share a host).
// It asks for MPI_THREAD_MULTIPLE: worker threads in a rank (run.local_workers)
// and their communication threads call MPI at once.
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
  const MpiTransport& transport() const { return *transport_; }
  int rank() const;  // in MPI_COMM_WORLD
  // Whether MPI gave MPI_THREAD_MULTIPLE (any thread may call it at any time).
  static bool threads_multiple();
  // Ends every rank of the job with `code` (after an error on one of them).
  [[noreturn]] static void abort_job(int code);

 private:
  const MpiTransport* transport_ = nullptr;
};

// Construction is collective: every rank constructs its communicator, in the
// same order. Each works on its own duplicate of MPI_COMM_WORLD, so messages
// that a failed one leaves in flight never reach a later one. (The first one
// a process makes also duplicates the roll call's channel.)
//
// On entering any collective, every rank sends every other a token (which
// collective, how many elements, which root) and waits for all of theirs:
// a rank that does not arrive in time is named in the error (with the ranks a
// roll call finds stopped: it may wait for one of them), and so is a rank
// that brought another size or entered another collective. After any failure
// the communicator is unusable: later calls throw at once.
class MpiCommunicator : public Communicator {
 public:
  explicit MpiCommunicator(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

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
  // MPI_Improbe on any source, polled until `wait` passes, then the matched
  // message is received. `tag` must not be negative (MPI_ANY_TAG is).
  std::optional<AnyMessage> recv_any(int tag, std::chrono::milliseconds wait) override;
  void set_waiting(Waiting waiting) override { waiting_ = waiting; }
  // A wait polls for it: the call fails with `reason` (the communicator is
  // then unusable), its requests given up as on a timeout.
  void interrupt(const std::string& reason) override;

  // The ranks that pass the same `color` (not negative), in the order of their
  // rank here, as a communicator of their own with this one's timeout: e.g. the
  // workers of a parameter-server job, for their collectives. Collective: every
  // rank of this communicator calls it. MPI_Comm_split on a duplicate of this
  // one, made after every rank has arrived, so that a rank that never arrives is
  // an error rather than a hang; a timeout leaves this communicator unusable.
  std::unique_ptr<MpiCommunicator> split(int color) const;

  // Another handle on this same MPI communicator, for another thread of this
  // process (needs MPI_THREAD_MULTIPLE): a message sent through one may be
  // received through any, so the threads' tags must keep them apart. Each
  // handle has its own counters, waiting and failure; a failure of any keeps
  // the MPI communicator from being freed. Not collective.
  std::unique_ptr<MpiCommunicator> share() const;

  // After a wait timed out on this rank, what a roll call of the job finds,
  // to follow the error: "; rank(s) 0, 2 stopped answering (stopped, hung or
  // gone)", or "; " + `when_all_answer` when every rank answers ("" for an
  // empty one, or when this process holds no roll calls). See the .cpp.
  // Public for a transport that moves a collective's bytes elsewhere
  // (comm/gloo_communicator.hpp).
  std::string roll_call(const std::string& when_all_answer = "");

 private:
  struct Handle;  // the MPI_Comm and the half-sum MPI_Op, kept out of this header

  // The entry check above; throws ptrain::Error naming the collective.
  void enter(const CollectiveEntry& entry);

  // A handle on `handle`'s communicator: a new one (from split()) is set up first.
  MpiCommunicator(std::shared_ptr<Handle> handle, std::chrono::milliseconds timeout, bool set_up_first);
  // Rank and size from handle_->comm; for a new communicator first errors as return codes and the half-sum MPI_Op.
  void set_up(bool new_communicator);

  // After a wait timed out on this rank: fails with `message` and roll_call()'s verdict.
  [[noreturn]] void timed_out(const std::string& message, const std::string& when_all_answer = "");
  // A native collective, which every rank had entered, timed out.
  [[noreturn]] void native_timed_out(const std::string& what);
  // Throws if an earlier call failed: its peers have given up on it.
  void check_usable(const std::string& what) const;
  // Marks the communicator unusable and throws `message`.
  [[noreturn]] void fail(const std::string& message) const;

  int rank_ = 0;
  int size_ = 1;
  std::chrono::milliseconds timeout_;
  Waiting waiting_ = Waiting::Spin;
  std::shared_ptr<Handle> handle_;  // shared by share()'s handles
  // The first failure's message; empty while usable. Mutable: a split() that
  // times out leaves MPI requests on this communicator, so it fails too.
  mutable std::string failure_;
  // interrupt(): set from another thread, polled by every wait.
  std::atomic<bool> interrupted_{false};
  mutable std::mutex interrupt_mutex_;  // guards interrupt_reason_
  std::string interrupt_reason_;
};

}  // namespace ptrain
