#pragma once
// Workers as threads of one process, communicating through shared memory.
// A LocalGroup is the state they share; each thread talks through its own
// LocalCommunicator. If one worker fails, abort() wakes every waiting worker
// with an error instead of leaving it blocked.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "comm/collective_entry.hpp"
#include "comm/communicator.hpp"

namespace ptrain {

class LocalGroup {
 public:
  // Errors name member r as worker `first_worker + r`: the threads of one MPI
  // rank in a hierarchical run are workers rank x T .. rank x T + T - 1.
  explicit LocalGroup(int size, std::chrono::milliseconds timeout = std::chrono::seconds(60), int first_worker = 0);

  int size() const { return size_; }
  int first_worker() const { return first_worker_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Makes every current and future wait of this group throw ptrain::Error(reason).
  void abort(const std::string& reason);

  // Waits until all workers have arrived. `what` names the operation for the
  // timeout error, which lists the workers that never arrived. Spins briefly
  // before sleeping: a step's collectives are microseconds apart, and a
  // condition-variable wake-up alone costs tens of them.
  void arrive_and_wait(int rank, std::string_view what);

  // Slots where each worker publishes what it brings to a collective: the
  // entry every worker checks, and the buffer peers read from.
  struct Slot {
    CollectiveEntry entry;
    const void* data = nullptr;
    size_t bytes = 0;
  };
  Slot& slot(int rank) { return slots_[static_cast<size_t>(rank)]; }

  // Marks a worker as inside a communication call while it lives, so that a
  // timeout can name the workers that never arrived rather than the ones that
  // were themselves waiting.
  class CallScope {
   public:
    CallScope(LocalGroup& group, int rank) : group_(group), rank_(rank) { group_.in_call_[rank_]++; }
    ~CallScope() { group_.in_call_[rank_]--; }
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

   private:
    LocalGroup& group_;
    int rank_;
  };

  // Point-to-point: a mailbox per (from, to, tag); post() copies and returns.
  void post(int from, int to, int tag, std::span<const std::byte> data);
  // Takes the oldest message into `data`; its size must match. Like
  // arrive_and_wait, watches the mailbox a while before sleeping.
  void take(int from, int to, int tag, std::span<std::byte> data);
  // Takes the message to `to` with `tag` that was posted first, from whichever
  // sender; std::nullopt when none arrives within `wait`. Sleeps at once: a
  // server waiting for any of its workers is not on a collective's fast path.
  std::optional<AnyMessage> take_any(int to, int tag, std::chrono::milliseconds wait);

 private:
  const int size_;
  const std::chrono::milliseconds timeout_;
  const int first_worker_;
  [[noreturn]] void throw_abort_reason();

  std::mutex mutex_;  // guards abort_reason_ and the sleep below
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> count_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> aborted_{false};
  bool oversubscribed_ = false;                   // more workers than cores: sleep instead of spinning
  std::unique_ptr<std::atomic<bool>[]> arrived_;  // for the timeout message only
  std::unique_ptr<std::atomic<int>[]> in_call_;   // see CallScope
  std::string absent_workers(int except) const;
  std::string abort_reason_;
  std::vector<Slot> slots_;
  struct Message {
    uint64_t sequence;  // the order of post() calls across mailboxes, for take_any
    std::vector<std::byte> bytes;
  };
  struct Mailbox {
    std::deque<Message> messages;    // under mutex_
    std::atomic<size_t> pending{0};  // messages.size(), for the receiver to watch unlocked
  };
  std::map<std::tuple<int, int, int>, Mailbox> mailboxes_;  // under mutex_; nodes never move
  uint64_t next_sequence_ = 0;                              // under mutex_
};

// The shared-memory all-reduce over the buffers the members published in
// their slots (Slot::data, `count` elements each, in place): member r of n owns
// the elements from slice_begin(count, r, n) to slice_begin(count, r + 1, n),
// sums them from every buffer, then copies the others' slices from theirs.
size_t slice_begin(size_t count, int r, int n);
// Elements [lo, hi) of every member's buffer, summed in member order into
// out[lo, hi); halves are summed in fp32 and rounded once, saturating
// (core/half.hpp). `out` may be a published buffer.
void sum_published(LocalGroup& group, size_t lo, size_t hi, float* out);
void sum_published(LocalGroup& group, size_t lo, size_t hi, uint16_t* out);
// Elements [lo, hi) of every member's buffer summed in member order, as
// sum_published, and written back into every member's buffer: an owner that
// spreads its slice itself reads and writes each byte once, where summing into
// its own buffer and copying the others' slices afterwards moves half as much
// again (for 2 members). Members publish their buffers to be reduced in place.
// T: float or uint16_t (halves, summed in fp32 and rounded once, saturating).
template <typename T>
void sum_published_to_all(LocalGroup& group, size_t lo, size_t hi);
// Every other member's slice of `out`, copied from its buffer; the bytes read.
uint64_t copy_published_slices(LocalGroup& group, int me, std::span<float> out);
uint64_t copy_published_slices(LocalGroup& group, int me, std::span<uint16_t> out);
uint64_t copy_published_slices(LocalGroup& group, int me, std::span<std::byte> out);

class LocalCommunicator : public Communicator {
 public:
  LocalCommunicator(std::shared_ptr<LocalGroup> group, int rank);

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string backend() const override { return "local"; }

  // Native and Hierarchical (every worker shares this process): each worker
  // sums its slice straight from the peers' buffers, in rank order.
  void allreduce(std::span<float> data, AllreduceAlgorithm algorithm = AllreduceAlgorithm::Native) override;
  // Native and Hierarchical: each worker sums its slice straight from the
  // peers' buffers, in fp32 in rank order, and rounds to half once.
  void allreduce_half(std::span<uint16_t> data,
                      AllreduceAlgorithm algorithm = AllreduceAlgorithm::Native) override;
  void broadcast(std::span<std::byte> data, int root) override;
  void barrier() override;
  std::vector<std::vector<std::byte>> allgatherv(std::span<const std::byte> mine) override;
  void send(int peer, int tag, std::span<const std::byte> data) override;
  void recv(int peer, int tag, std::span<std::byte> data) override;
  std::optional<AnyMessage> recv_any(int tag, std::chrono::milliseconds wait) override;
  void interrupt(const std::string& reason) override { group_->abort(reason); }

 private:
  // The entry check: publishes this worker's entry and buffer, waits for all,
  // and throws if any worker entered another collective or brought another
  // size. Peers may read the slot until the collective's next arrive_and_wait.
  void enter(const CollectiveEntry& entry, const void* data, size_t bytes);
  void check_peer(int peer) const;
  // An all-reduce of floats or halves: the shared-memory sum, or one of the
  // algorithms of comm/allreduce_algorithms.hpp over send and recv.
  template <typename T>
  void native_or_algorithm(std::span<T> data, const CollectiveEntry& entry);

  std::shared_ptr<LocalGroup> group_;
  int rank_;
};

}  // namespace ptrain
