#include "comm/mpi_communicator.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "comm/allreduce_algorithms.hpp"
#include "comm/message_tags.hpp"
#include "core/error.hpp"

namespace ptrain {

namespace {

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(fmt::format("{}: MPI error: {}", what, std::string(text, static_cast<size_t>(length))));
}

// Polls the requests until all complete or the deadline passes.
bool wait_all(MPI_Request* requests, int count, std::chrono::milliseconds timeout, MPI_Status* statuses) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (uint32_t i = 0;; ++i) {
    int done = 0;
    check(MPI_Testall(count, requests, &done, statuses), "MPI_Testall");
    if (done) return true;
    if (i % 64 == 63) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
  }
}

std::string seconds_text(std::chrono::milliseconds t) {
  return fmt::format("{:g} s", static_cast<double>(t.count()) / 1000.0);
}

}  // namespace

bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(variable)) return true;
  return false;
}

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int provided = 0;
  check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  // Errors come back as codes, so they become ptrain::Error with a message.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiRuntime::~MpiRuntime() { MPI_Finalize(); }

void MpiRuntime::abort_job(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

MpiCommunicator::MpiCommunicator(std::chrono::milliseconds timeout) : timeout_(timeout) {
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

void MpiCommunicator::allreduce(std::span<float> data, AllreduceAlgorithm algorithm) {
  if (algorithm != AllreduceAlgorithm::Native) return run_allreduce_algorithm(*this, data, algorithm);
  stats_.collectives++;
  if (size_ == 1) return;
  // Ranks must agree on the size first: MPI would otherwise fail obscurely or hang.
  uint64_t mine = data.size(), sizes[2] = {mine, ~mine};
  MPI_Request request;
  check(MPI_Iallreduce(MPI_IN_PLACE, sizes, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD, &request), "allreduce");
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE))
    throw Error(fmt::format("allreduce: rank {} timed out after {} waiting for the other ranks", rank_,
                            seconds_text(timeout_)));
  if (sizes[0] != mine || ~sizes[1] != mine)
    throw Error(fmt::format("allreduce: rank {} brought {} floats but another rank brought {}", rank_, mine,
                            sizes[0] != mine ? sizes[0] : ~sizes[1]));
  check(MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM,
                       MPI_COMM_WORLD, &request),
        "allreduce");
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE))
    throw Error(fmt::format("allreduce: rank {} timed out after {}", rank_, seconds_text(timeout_)));
  const uint64_t moved =
      2 * data.size_bytes() * static_cast<uint64_t>(size_ - 1) / static_cast<uint64_t>(size_);
  stats_.bytes_sent += moved;
  stats_.bytes_received += moved;
}

void MpiCommunicator::broadcast(std::span<std::byte> data, int root) {
  stats_.collectives++;
  if (size_ == 1) return;
  MPI_Request request;
  check(MPI_Ibcast(data.data(), static_cast<int>(data.size()), MPI_BYTE, root, MPI_COMM_WORLD, &request),
        "broadcast");
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE))
    throw Error(fmt::format("broadcast: rank {} timed out after {} waiting for rank {}", rank_,
                            seconds_text(timeout_), root));
  (rank_ == root ? stats_.bytes_sent : stats_.bytes_received) += data.size();
}

void MpiCommunicator::barrier() {
  stats_.collectives++;
  MPI_Request request;
  check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "barrier");
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE))
    throw Error(fmt::format("barrier: rank {} timed out after {} waiting for the other ranks", rank_,
                            seconds_text(timeout_)));
}

void MpiCommunicator::send(int peer, int tag, std::span<const std::byte> data) {
  MPI_Request request;
  check(MPI_Isend(data.data(), static_cast<int>(data.size()), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &request),
        "send");
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE))
    throw Error(fmt::format("{}: rank {} timed out after {} waiting for rank {} to receive", tag_name(tag),
                            rank_, seconds_text(timeout_), peer));
  stats_.bytes_sent += data.size();
}

void MpiCommunicator::recv(int peer, int tag, std::span<std::byte> data) {
  sendrecv(MPI_PROC_NULL, {}, peer, data, tag);
}

void MpiCommunicator::sendrecv(int to, std::span<const std::byte> out, int from, std::span<std::byte> in,
                               int tag) {
  // One byte more than expected, so a longer message shows as a size error, not a truncation.
  std::vector<std::byte> spare(in.size() + 1);
  MPI_Request requests[2];
  check(MPI_Irecv(spare.data(), static_cast<int>(spare.size()), MPI_BYTE, from, tag, MPI_COMM_WORLD,
                  &requests[0]),
        tag_name(tag).c_str());
  check(MPI_Isend(out.data(), static_cast<int>(out.size()), MPI_BYTE, to, tag, MPI_COMM_WORLD, &requests[1]),
        tag_name(tag).c_str());
  MPI_Status statuses[2];
  if (!wait_all(requests, 2, timeout_, statuses))
    throw Error(fmt::format("{}: rank {} timed out after {} waiting for rank {}", tag_name(tag), rank_,
                            seconds_text(timeout_), from));
  int received = 0;
  MPI_Get_count(&statuses[0], MPI_BYTE, &received);
  if (static_cast<size_t>(received) != in.size())
    throw Error(fmt::format("{}: rank {} sent {}{} bytes but rank {} expected {} bytes", tag_name(tag), from,
                            static_cast<size_t>(received) > in.size() ? "more than " : "",
                            std::min<size_t>(static_cast<size_t>(received), in.size()), rank_, in.size()));
  std::copy(spare.begin(), spare.begin() + static_cast<std::ptrdiff_t>(in.size()), in.begin());
  if (to != MPI_PROC_NULL) stats_.bytes_sent += out.size();
  stats_.bytes_received += in.size();
}

}  // namespace ptrain
