#pragma once
// Workers as MPI ranks (processes, possibly on several hosts) under mpirun.
// Native all-reduce is MPI_Allreduce; the algorithms in comm/ run over the
// point-to-point calls. Every call waits on non-blocking MPI requests with a
// deadline, so a rank that never arrives is an error naming it, not a hang.
#include <chrono>

#include "comm/communicator.hpp"

namespace ptrain {

// True when this process was started by mpirun / an MPI launcher.
bool launched_by_mpi();

// MPI_Init_thread on construction and MPI_Finalize on destruction (once per process).
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
  // Ends every rank of the job with `code` (after an error on one of them).
  [[noreturn]] static void abort_job(int code);
};

class MpiCommunicator : public Communicator {
 public:
  explicit MpiCommunicator(std::chrono::milliseconds timeout = std::chrono::seconds(60));

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void allreduce(std::span<float> data, AllreduceAlgorithm algorithm = AllreduceAlgorithm::Native) override;
  void broadcast(std::span<std::byte> data, int root) override;
  void barrier() override;
  void send(int peer, int tag, std::span<const std::byte> data) override;
  void recv(int peer, int tag, std::span<std::byte> data) override;
  void sendrecv(int to, std::span<const std::byte> out, int from, std::span<std::byte> in, int tag) override;

 private:
  int rank_ = 0;
  int size_ = 1;
  std::chrono::milliseconds timeout_;
};

}  // namespace ptrain
