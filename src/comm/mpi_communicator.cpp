#include "comm/mpi_communicator.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "comm/allreduce_algorithms.hpp"
#include "comm/message_tags.hpp"
#include "comm/mpi_roll_call.hpp"
#include "comm/mpi_transport.hpp"
#include "core/error.hpp"
#include "core/half.hpp"
#include "core/run_failure.hpp"
#include "core/wait_deadline.hpp"

namespace ptrain {

struct MpiCommunicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Op half_sum = MPI_OP_NULL;  // for allreduce_half: see half_sum() below
  // Its rank r is rank r of MPI_COMM_WORLD, whose ranks a roll call names.
  bool like_world = false;
  // A handle on it failed. A failed communicator stays allocated: peers may
  // still send to it, and freeing it would let MPI give its context to a later
  // communicator. The same for the MPI_Op: a failed MPI_Iallreduce may still use it.
  std::atomic<bool> failed{false};
  Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (failed || finalized) return;
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    if (half_sum != MPI_OP_NULL) MPI_Op_free(&half_sum);
  }
};

namespace {

void check(int code, const std::string& what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(fmt::format("{}: MPI error: {}", what, std::string(text, static_cast<size_t>(length))));
}

// Polls the requests until all complete or the deadline passes. On timeout no
// request has been touched: each is either still active or MPI_REQUEST_NULL.
// With Waiting::Nap, after 64 polls it sleeps 500 us between polls: 62 KB at
// 1 Gbit/s, 625 KB at 10, less than a TCP socket buffer holds, so the kernel
// goes on moving the bytes while the rank gives its core away. (Measured on
// 4 workers and 2 shards sharing 2 cores: 50 us naps gained a third of what
// 500 us did.)
// `interrupted` (Communicator::interrupt) ends the wait as a timeout does.
// Every 64 polls it answers the roll calls waiting for this rank
// (comm/mpi_roll_call.hpp), so that a rank waiting here counts as there.
bool wait_all(MPI_Request* requests, int count, std::chrono::milliseconds timeout, MPI_Status* statuses,
              Communicator::Waiting waiting = Communicator::Waiting::Spin,
              const std::atomic<bool>* interrupted = nullptr) {
  WaitDeadline deadline(timeout);
  for (uint32_t i = 0;; ++i) {
    int done = 0;
    check(MPI_Testall(count, requests, &done, statuses), "MPI_Testall");
    if (done) return true;
    if (interrupted && interrupted->load(std::memory_order_relaxed)) return false;
    if (waiting == Communicator::Waiting::Nap && i >= 64)
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    if (i % 64 == 63) {
      answer_roll_calls();
      if (deadline.passed()) return false;
      std::this_thread::yield();
    }
  }
}

// Gives up a point-to-point request that did not complete in time; true when
// it completed after all. A receive is cancelled and waited for, so its buffer
// may be freed afterwards. A send cannot be cancelled reliably: it is released
// to complete on its own, and MPI may still read its buffer.
bool abandon(MPI_Request& request, bool receive) {
  if (request == MPI_REQUEST_NULL) return true;
  int done = 0;
  MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  if (done) return true;
  if (receive) {
    MPI_Cancel(&request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  } else {
    MPI_Request_free(&request);
  }
  return false;
}

// The MPI_Op of the native half all-reduce, on MPI_UINT16_T: inout = in + inout,
// added in fp32 and rounded back to half, saturating (core/half.hpp).
void half_sum(void* in, void* inout, int* length, MPI_Datatype*) {
  const auto n = static_cast<size_t>(*length);
  add_halves({static_cast<uint16_t*>(inout), n}, {static_cast<const uint16_t*>(in), n});
}

}  // namespace

bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(variable)) return true;
  return false;
}

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  // Before MPI_Init, which reads the transport settings from the environment.
  transport_ = &apply_mpi_transport();
  // MPI_THREAD_MULTIPLE whether or not the run has worker threads in its
  // ranks (MPI starts before the plan is read). Measured with OpenMPI 4.1.4
  // (Debian's, built with it) on the 2-core VM: one thread exchanging 64 MiB
  // with another rank in 1 MiB messages took as long as under
  // MPI_THREAD_SERIALIZED, over shared memory and over TCP (medians of 5,
  // 766 against 791 ms and 995 against 1053 ms on the loaded machine). The
  // hierarchical backend's threads call MPI at once, each on a communicator
  // of its own rather than funnelled through one thread: between 2 shaped
  // 1 Gbit/s hosts a 64 MiB hierarchical all-reduce took 0.90 to 0.95 s with
  // 1, 2 or 4 threads a rank (docs/training.md: hierarchical all-reduce).
  int provided = 0;
  check(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  // Errors come back as codes, so they become ptrain::Error with a message.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiRuntime::~MpiRuntime() { MPI_Finalize(); }

bool MpiRuntime::threads_multiple() {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  return level == MPI_THREAD_MULTIPLE;
}

int MpiRuntime::rank() const {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void MpiRuntime::abort_job(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

MpiCommunicator::MpiCommunicator(std::chrono::milliseconds timeout) : timeout_(timeout) {
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  auto handle = std::make_unique<Handle>();
  MPI_Request requests[2];  // this communicator and, for the process's first, the roll call's channel
  check(MPI_Comm_idup(MPI_COMM_WORLD, &handle->comm, &requests[0]), "communicator setup");
  const bool channel = start_roll_call_channel(&requests[1]);
  if (!wait_all(requests, 2, timeout_, MPI_STATUSES_IGNORE)) {
    // MPI may still write the new communicator into the handle: leave it allocated.
    // (Without a channel this rank neither holds nor answers roll calls.)
    static_cast<void>(handle.release());
    throw InterruptedError(fmt::format("communicator setup: rank {} timed out after {} waiting for the other ranks",
                            rank_, seconds_text(timeout_)));
  }
  if (channel) roll_call_channel_ready();
  handle_ = std::move(handle);
  set_up(true);
}

MpiCommunicator::MpiCommunicator(std::shared_ptr<Handle> handle, std::chrono::milliseconds timeout,
                                 bool set_up_first)
    : timeout_(timeout), handle_(std::move(handle)) {
  set_up(set_up_first);
}

void MpiCommunicator::set_up(bool new_communicator) {
  check(MPI_Comm_rank(handle_->comm, &rank_), "communicator setup");
  check(MPI_Comm_size(handle_->comm, &size_), "communicator setup");
  if (!new_communicator) return;
  MPI_Comm_set_errhandler(handle_->comm, MPI_ERRORS_RETURN);
  int comparison = MPI_UNEQUAL;
  check(MPI_Comm_compare(handle_->comm, MPI_COMM_WORLD, &comparison), "communicator setup");
  handle_->like_world = comparison == MPI_CONGRUENT || comparison == MPI_IDENT;
  // Created commutative: one fp32 addition and one rounding do not depend on
  // the order of the operands. MPI regroups the additions as its algorithm
  // likes, so the native result depends on MPI's choice, as a float
  // MPI_Allreduce's does; ring, hd and tree give the local backend's bits.
  check(MPI_Op_create(&half_sum, 1, &handle_->half_sum), "communicator setup");
}

// The MPI communicator goes with its last handle (Handle's destructor).
MpiCommunicator::~MpiCommunicator() = default;

std::unique_ptr<MpiCommunicator> MpiCommunicator::share() const {
  check_usable("share");
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(handle_, timeout_, false));
}

void MpiCommunicator::check_usable(const std::string& what) const {
  if (!failure_.empty())
    throw Error(fmt::format("{}: communicator unusable after an earlier failure: {}", what, failure_));
}

void MpiCommunicator::fail(const std::string& message) const {
  std::string why = message;
  if (interrupted_) {  // what ended the wait
    std::lock_guard lock(interrupt_mutex_);
    why = interrupt_reason_;
  }
  if (failure_.empty()) failure_ = why;
  handle_->failed = true;
  throw InterruptedError(why);  // a rank died, hung or disagreed: the job may go on from a checkpoint
}

void MpiCommunicator::interrupt(const std::string& reason) {
  {
    std::lock_guard lock(interrupt_mutex_);
    if (interrupted_) return;
    interrupt_reason_ = reason;
  }
  interrupted_ = true;
}

void MpiCommunicator::enter(const CollectiveEntry& entry) {
  const std::string what = entry.name();
  check_usable(what);
  if (size_ == 1) return;
  const auto n = static_cast<size_t>(size_), me = static_cast<size_t>(rank_);
  // tokens[r]: rank r's entry; this rank's own, at tokens[rank], goes to every peer.
  auto tokens = std::make_unique<CollectiveEntry::Token[]>(n);
  tokens[me] = entry.token();
  std::vector<MPI_Request> requests(2 * n, MPI_REQUEST_NULL);  // receives at [r], sends at [n + r]
  const int words = static_cast<int>(std::tuple_size_v<CollectiveEntry::Token>);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const auto i = static_cast<size_t>(r);
    check(
        MPI_Irecv(tokens[i].data(), words, MPI_UINT64_T, r, kTagCollectiveEntry, handle_->comm, &requests[i]),
        what);
    check(MPI_Isend(tokens[me].data(), words, MPI_UINT64_T, r, kTagCollectiveEntry, handle_->comm,
                    &requests[n + i]),
          what);
  }
  if (!wait_all(requests.data(), static_cast<int>(requests.size()), timeout_, MPI_STATUSES_IGNORE, Waiting::Spin,
                &interrupted_)) {
    std::string missing;
    for (int r = 0; r < size_; ++r)
      if (!abandon(requests[static_cast<size_t>(r)], true))
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    if (missing.empty()) {
      // Every peer has entered, so each has posted the receive for this rank's token.
      check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), what);
    } else {
      bool sends_done = true;
      for (size_t i = n; i < 2 * n; ++i) sends_done &= abandon(requests[i], false);
      // MPI may still read this rank's token: leave the tokens allocated.
      if (!sends_done) static_cast<void>(tokens.release());
      // The missing rank may itself wait for one that stopped, here or on another communicator.
      timed_out(collective_timeout(what, rank_, timeout_, missing, "rank"));
    }
  }
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const std::string mismatch =
        entry_mismatch(entry, rank_, CollectiveEntry::from_token(tokens[static_cast<size_t>(r)]), r, "rank");
    if (!mismatch.empty()) fail(mismatch);
  }
}

// A rank timed out: in MPI's collective, where MPI does not say which rank
// it waits for, or waiting for a peer that may itself wait for another. The
// roll call (comm/mpi_roll_call.hpp) names the ranks of the job that stopped
// answering, "of the job" where this communicator numbers its ranks
// otherwise (split()). It listens a quarter of the timeout, at most a
// second: long enough for a rank that polls, whatever it waits in, to answer.
std::string MpiCommunicator::roll_call(const std::string& when_all_answer) {
  const auto listen = std::clamp(timeout_ / 4, std::chrono::milliseconds(1), std::chrono::milliseconds(1000));
  const auto silent = call_the_roll(listen);
  if (!silent) return "";  // no channel to call on
  std::string missing;
  for (int r : *silent) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  if (missing.empty()) return when_all_answer.empty() ? "" : "; " + when_all_answer;
  return fmt::format("; rank(s) {}{} stopped answering (stopped, hung or gone)", missing,
                     handle_->like_world ? "" : " of the job");
}

void MpiCommunicator::timed_out(const std::string& message, const std::string& when_all_answer) {
  if (interrupted_) fail(message);  // a sibling thread failed: its reason, no roll call
  fail(message + roll_call(when_all_answer));
}

void MpiCommunicator::native_timed_out(const std::string& what) {
  timed_out(fmt::format("{}: rank {} timed out after {} in MPI's collective, which every rank had entered",
                        what, rank_, seconds_text(timeout_)),
            "every rank still answers (MPI itself is stuck?)");
}

void MpiCommunicator::allreduce(std::span<float> data, AllreduceAlgorithm algorithm) {
  stats_.collectives++;
  enter(CollectiveEntry::allreduce(data.size(), algorithm));
  if (size_ == 1) return;
  if (algorithm != AllreduceAlgorithm::Native) return run_allreduce_algorithm(*this, data, algorithm);
  MPI_Request request;
  check(MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM,
                       handle_->comm, &request),
        "allreduce");
  // Every rank has arrived, so only a rank that died on the way stops this.
  // (A collective request cannot be cancelled; the communicator is given up.)
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE, Waiting::Spin, &interrupted_)) native_timed_out("allreduce");
  count_allreduce_traffic(data.size_bytes());
}

void MpiCommunicator::allreduce_half(std::span<uint16_t> data, AllreduceAlgorithm algorithm) {
  stats_.collectives++;
  const auto entry = CollectiveEntry::allreduce_half(data.size(), algorithm);
  enter(entry);
  if (size_ == 1) return;
  if (algorithm != AllreduceAlgorithm::Native) return run_allreduce_half_algorithm(*this, data, algorithm);
  const std::string what = entry.name();
  MPI_Request request;
  check(MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_UINT16_T,
                       handle_->half_sum, handle_->comm, &request),
        what);
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE, Waiting::Spin, &interrupted_)) native_timed_out(what);
  count_allreduce_traffic(data.size_bytes());
}

void MpiCommunicator::broadcast(std::span<std::byte> data, int root) {
  stats_.collectives++;
  // After the entry check every rank has the same root, so all fail alike.
  enter(CollectiveEntry::broadcast(data.size(), root));
  if (root < 0 || root >= size_)
    throw Error("broadcast: root " + std::to_string(root) + " outside a group of " + std::to_string(size_));
  if (size_ == 1) return;
  MPI_Request request;
  check(MPI_Ibcast(data.data(), static_cast<int>(data.size()), MPI_BYTE, root, handle_->comm, &request),
        "broadcast");
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE, Waiting::Spin, &interrupted_)) native_timed_out("broadcast");
  (rank_ == root ? stats_.bytes_sent : stats_.bytes_received) += data.size();
}

void MpiCommunicator::barrier() {
  stats_.collectives++;
  // Every rank waits for every other's entry token: that is a barrier.
  enter(CollectiveEntry::barrier());
}

std::vector<std::vector<std::byte>> MpiCommunicator::allgatherv(std::span<const std::byte> mine) {
  enter(CollectiveEntry::allgatherv());
  return Communicator::allgatherv(mine);
}

void MpiCommunicator::send(int peer, int tag, std::span<const std::byte> data) {
  check_usable(tag_name(tag));
  MPI_Request request;
  check(MPI_Isend(data.data(), static_cast<int>(data.size()), MPI_BYTE, peer, tag, handle_->comm, &request),
        tag_name(tag));
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE, waiting_, &interrupted_)) {
    abandon(request, false);
    timed_out(fmt::format("{}: rank {} timed out after {} waiting for rank {} to receive", tag_name(tag),
                          rank_, seconds_text(timeout_), peer));
  }
  stats_.bytes_sent += data.size();
}

void MpiCommunicator::recv(int peer, int tag, std::span<std::byte> data) {
  sendrecv(MPI_PROC_NULL, {}, peer, data, tag);
}

void MpiCommunicator::sendrecv(int to, int send_tag, std::span<const std::byte> out, int from, int recv_tag,
                               std::span<std::byte> in) {
  const int tag = recv_tag;  // what the errors below name
  check_usable(tag_name(tag));
  // One byte more than expected, so a longer message shows as a size error, not a truncation.
  std::vector<std::byte> spare(in.size() + 1);
  MPI_Request requests[2];
  check(MPI_Irecv(spare.data(), static_cast<int>(spare.size()), MPI_BYTE, from, recv_tag, handle_->comm,
                  &requests[0]),
        tag_name(tag));
  check(MPI_Isend(out.data(), static_cast<int>(out.size()), MPI_BYTE, to, send_tag, handle_->comm, &requests[1]),
        tag_name(send_tag));
  MPI_Status statuses[2];
  if (!wait_all(requests, 2, timeout_, statuses, waiting_, &interrupted_)) {
    const bool received = abandon(requests[0], true);  // `spare` is free to go after this
    abandon(requests[1], false);
    timed_out(fmt::format("{}: rank {} timed out after {} waiting for rank {}", tag_name(tag), rank_,
                          seconds_text(timeout_), received ? to : from));
  }
  int received = 0;
  MPI_Get_count(&statuses[0], MPI_BYTE, &received);
  if (static_cast<size_t>(received) != in.size())
    fail(fmt::format("{}: rank {} sent {}{} bytes but rank {} expected {} bytes", tag_name(tag), from,
                     static_cast<size_t>(received) > in.size() ? "more than " : "",
                     std::min<size_t>(static_cast<size_t>(received), in.size()), rank_, in.size()));
  std::copy(spare.begin(), spare.begin() + static_cast<std::ptrdiff_t>(in.size()), in.begin());
  if (to != MPI_PROC_NULL) stats_.bytes_sent += out.size();
  stats_.bytes_received += in.size();
}

std::optional<AnyMessage> MpiCommunicator::recv_any(int tag, std::chrono::milliseconds wait) {
  check_usable("recv_any");
  if (tag < 0) throw Error(fmt::format("recv_any: rank {} got a negative tag ({})", rank_, tag));
  if (wait < std::chrono::milliseconds(0))
    throw Error(fmt::format("recv_any: rank {} got a negative wait ({} ms)", rank_, wait.count()));
  WaitDeadline deadline(wait);
  // A matched probe takes the message out of MPI's queue, so no later receive
  // can steal it between the probe and the receive of its size.
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  // Waiting for a message to begin, unlike waiting for one in flight, needs
  // no progress from this rank: after a short spin it sleeps between probes
  // (20 us, doubling up to 1 ms), so that a parameter-server worker waiting
  // for its shard leaves the cores to the shard. A message that arrives
  // meanwhile waits at most that long to be taken. (recv_any serves only the
  // parameter server, whose waits are long whatever set_waiting says.)
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  std::chrono::microseconds nap(20);
  for (;;) {
    int found = 0;
    check(MPI_Improbe(MPI_ANY_SOURCE, tag, handle_->comm, &found, &message, &status), "recv_any");
    if (found) break;
    if (deadline.passed()) return std::nullopt;
    if (std::chrono::steady_clock::now() < spin_until) continue;
    answer_roll_calls();  // as wait_all does
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(nap, deadline.slice()));
    nap = std::min(2 * nap, std::chrono::microseconds(1000));
  }
  int count = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &count), "recv_any");
  auto bytes = std::make_unique<std::vector<std::byte>>(static_cast<size_t>(count));
  MPI_Request request;
  check(MPI_Imrecv(bytes->data(), count, MPI_BYTE, &message, &request), "recv_any");
  // Matched already: only a sender that dies mid-transfer stops this.
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE, waiting_, &interrupted_)) {
    static_cast<void>(bytes.release());  // MPI may still write into it
    timed_out(fmt::format("{}: rank {} timed out after {} receiving {} bytes from rank {}", tag_name(tag),
                          rank_, seconds_text(timeout_), count, status.MPI_SOURCE));
  }
  stats_.bytes_received += static_cast<uint64_t>(count);
  return AnyMessage{status.MPI_SOURCE, std::move(*bytes)};
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::split(int color) const {
  check_usable("split");
  const std::string timed_out = fmt::format("split: rank {} timed out after {} waiting for the other ranks",
                                            rank_, seconds_text(timeout_));
  // 1. A duplicate of this communicator, private to this call: every rank has arrived.
  auto dup = std::make_unique<MPI_Comm>(MPI_COMM_NULL);
  MPI_Request request;
  check(MPI_Comm_idup(handle_->comm, dup.get(), &request), "split");
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE)) {
    static_cast<void>(dup.release());  // MPI may still write the duplicate there
    fail(timed_out);
  }
  // 2. Every rank's color, on the duplicate: a rank that arrives after its peers
  // gave up completes step 1 with their abandoned requests, but times out here
  // instead of blocking in MPI_Comm_split for ever.
  const auto n = static_cast<size_t>(size_);
  auto colors = std::make_unique<int[]>(n);
  colors[static_cast<size_t>(rank_)] = color;
  check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, colors.get(), 1, MPI_INT, *dup, &request),
        "split");
  if (!wait_all(&request, 1, timeout_, MPI_STATUSES_IGNORE)) {
    static_cast<void>(colors.release());  // MPI may still write there, and use the duplicate
    static_cast<void>(dup.release());
    fail(timed_out);
  }
  // Every rank sees every color, so all fail alike.
  for (int r = 0; r < size_; ++r) {
    if (colors[static_cast<size_t>(r)] >= 0) continue;
    MPI_Comm_free(dup.get());
    throw Error(fmt::format("split: rank {} passed color {} (colors must not be negative)", r,
                            colors[static_cast<size_t>(r)]));
  }
  // 3. MPI_Comm_split has no non-blocking form; every rank is on its way to it.
  auto handle = std::make_shared<Handle>();
  const int code = MPI_Comm_split(*dup, color, rank_, &handle->comm);
  if (code != MPI_SUCCESS) handle->comm = MPI_COMM_NULL;  // nothing for the handle to free
  MPI_Comm_free(dup.get());
  check(code, "split");
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(std::move(handle), timeout_, true));
}

}  // namespace ptrain
