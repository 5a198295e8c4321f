#include "comm/mpi_roll_call.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "core/wait_deadline.hpp"

namespace ptrain {

namespace {

// A call is an int on this tag: the tag to answer on (1 and up). Each call
// has a tag of its own, so that the answers to the threads of a process that
// call at once, or a late answer to an earlier call, never mix.
constexpr int kCallTag = 0;

MPI_Comm channel = MPI_COMM_NULL;  // written by MPI_Comm_idup; read once `ready`
int answer_tags = 32767;           // the channel's MPI_TAG_UB (at least this)
std::atomic<bool> asked_for{false}, ready{false};
std::atomic<uint32_t> calls{0};

}  // namespace

bool start_roll_call_channel(MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  if (asked_for.exchange(true)) return false;
  // The caller waits for it with its own communicator's and fails as that one does.
  return MPI_Comm_idup(MPI_COMM_WORLD, &channel, request) == MPI_SUCCESS;
}

void roll_call_channel_ready() {
  MPI_Comm_set_errhandler(channel, MPI_ERRORS_RETURN);
  int* bound = nullptr;
  int found = 0;
  MPI_Comm_get_attr(channel, MPI_TAG_UB, &bound, &found);
  if (found && bound) answer_tags = *bound;
  ready.store(true, std::memory_order_release);
}

void answer_roll_calls() {
  if (!ready.load(std::memory_order_acquire)) return;
  for (;;) {
    // A matched probe: one thread of this process takes each call.
    int found = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status;
    if (MPI_Improbe(MPI_ANY_SOURCE, kCallTag, channel, &found, &message, &status) != MPI_SUCCESS || !found)
      return;
    int tag = 0;
    if (MPI_Mrecv(&tag, 1, MPI_INT, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
    // Empty, so nothing to keep alive: released to complete on its own.
    MPI_Request request;
    if (MPI_Isend(nullptr, 0, MPI_BYTE, status.MPI_SOURCE, tag, channel, &request) == MPI_SUCCESS)
      MPI_Request_free(&request);
  }
}

std::optional<std::vector<int>> call_the_roll(std::chrono::milliseconds listen) {
  if (!ready.load(std::memory_order_acquire)) return std::nullopt;
  int me = 0, size = 0;
  MPI_Comm_rank(channel, &me);
  MPI_Comm_size(channel, &size);
  auto tag = std::make_unique<int>(1 + static_cast<int>(calls++ % static_cast<uint32_t>(answer_tags)));
  const auto n = static_cast<size_t>(size);
  std::vector<MPI_Request> requests(2 * n, MPI_REQUEST_NULL);  // answers at [r], calls at [n + r]
  std::vector<bool> answered(n, false);
  for (int r = 0; r < size; ++r) {
    if (r == me) continue;
    const auto i = static_cast<size_t>(r);
    MPI_Irecv(nullptr, 0, MPI_BYTE, r, *tag, channel, &requests[i]);
    MPI_Isend(tag.get(), 1, MPI_INT, r, kCallTag, channel, &requests[n + i]);
  }
  // Ranks in a roll call of their own (all timed out in one collective) answer each other from here.
  WaitDeadline deadline(listen);
  for (bool waiting = true; waiting;) {
    waiting = false;
    for (size_t i = 0; i < n; ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      int done = 0;
      // An error (a rank gone) completes the request unanswered.
      if (MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) continue;
      answered[i] = done != 0;
      waiting |= !done;
    }
    answer_roll_calls();
    if (waiting && deadline.passed()) break;
    if (waiting) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  std::vector<int> silent;
  bool in_flight = false;
  for (size_t i = 0; i < n; ++i) {
    if (i == static_cast<size_t>(me)) continue;
    if (requests[i] != MPI_REQUEST_NULL) {
      // An answer after this is left unmatched: its tag is this call's alone.
      MPI_Status status;
      MPI_Cancel(&requests[i]);
      MPI_Wait(&requests[i], &status);
      int cancelled = 0;
      MPI_Test_cancelled(&status, &cancelled);
      answered[i] = !cancelled;
    }
    if (!answered[i]) silent.push_back(static_cast<int>(i));
    if (requests[n + i] != MPI_REQUEST_NULL) {
      int done = 0;
      MPI_Test(&requests[n + i], &done, MPI_STATUS_IGNORE);
      if (!done) {
        MPI_Request_free(&requests[n + i]);
        in_flight = true;
      }
    }
  }
  if (in_flight) static_cast<void>(tag.release());  // MPI may still read it
  return silent;
}

}  // namespace ptrain
