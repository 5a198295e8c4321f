#include "comm/local_group.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "comm/allreduce_algorithms.hpp"
#include "comm/message_tags.hpp"
#include "core/error.hpp"
#include "core/half.hpp"
#include "core/thread_affinity.hpp"
#include "core/wait_deadline.hpp"

namespace ptrain {

namespace {

constexpr auto kSpinTime = std::chrono::milliseconds(2);

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

}  // namespace

LocalGroup::LocalGroup(int size, std::chrono::milliseconds timeout, int first_worker)
    : size_(size), timeout_(timeout), first_worker_(first_worker), slots_(static_cast<size_t>(std::max(size, 0))) {
  if (size <= 0) throw Error("local group: needs at least one worker (got " + std::to_string(size) + ")");
  arrived_ = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(size));
  oversubscribed_ = static_cast<size_t>(size) > std::max<size_t>(allowed_cpus().size(), 1);
  in_call_ = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    arrived_[static_cast<size_t>(r)] = false, in_call_[static_cast<size_t>(r)] = 0;
}

void LocalGroup::abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (!aborted_) {
    abort_reason_ = reason;
    aborted_ = true;
  }
  cv_.notify_all();
}

void LocalGroup::throw_abort_reason() {
  std::lock_guard lock(mutex_);
  throw Error(abort_reason_);
}

void LocalGroup::arrive_and_wait(int rank, std::string_view what) {
  if (aborted_) throw_abort_reason();
  const uint64_t my_generation = generation_.load();
  arrived_[static_cast<size_t>(rank)] = true;
  if (count_.fetch_add(1) + 1 == size_) {
    count_ = 0;
    for (int r = 0; r < size_; ++r) arrived_[static_cast<size_t>(r)] = false;
    generation_.store(my_generation + 1);
    if (sleepers_.load() > 0) {
      std::lock_guard lock(mutex_);
      cv_.notify_all();
    }
    return;
  }
  // Spin a while before sleeping: waking a sleeping thread costs far more than
  // the wait a step's collectives usually see. With more workers than cores,
  // yield while spinning, so that the late worker gets this core.
  const auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
  for (uint32_t i = 1;; ++i) {
    if (generation_.load(std::memory_order_acquire) != my_generation) return;
    // A peer may complete this barrier, fail right after it and abort between
    // the two loads: the barrier still completed, so look at it once more.
    if (aborted_.load(std::memory_order_acquire)) {
      if (generation_.load(std::memory_order_acquire) != my_generation) return;
      throw_abort_reason();
    }
    if (oversubscribed_)
      std::this_thread::yield();
    else
      cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > spin_until) break;
  }
  std::unique_lock lock(mutex_);
  sleepers_++;
  const bool done =
      WaitDeadline(timeout_).wait(cv_, lock, [&] { return generation_.load() != my_generation || aborted_; });
  sleepers_--;
  if (generation_.load() != my_generation) return;
  if (aborted_) throw Error(abort_reason_);
  if (!done) {
    std::string missing;
    for (int r = 0; r < size_; ++r)
      if (!arrived_[static_cast<size_t>(r)])
        missing += (missing.empty() ? "" : ", ") + std::to_string(first_worker_ + r);
    abort_reason_ = collective_timeout(what, first_worker_ + rank, timeout_, missing, "worker");
    aborted_ = true;
    cv_.notify_all();
    throw Error(abort_reason_);
  }
}

std::string LocalGroup::absent_workers(int except) const {
  std::string absent;
  for (int r = 0; r < size_; ++r)
    if (r != except && in_call_[static_cast<size_t>(r)] == 0)
      absent += (absent.empty() ? "" : ", ") + std::to_string(first_worker_ + r);
  return absent;
}

void LocalGroup::post(int from, int to, int tag, std::span<const std::byte> data) {
  std::vector<std::byte> message(data.begin(), data.end());  // copied outside the lock
  std::lock_guard lock(mutex_);
  auto& box = mailboxes_[{from, to, tag}];
  box.messages.push_back({next_sequence_++, std::move(message)});
  box.pending.fetch_add(1, std::memory_order_release);
  if (sleepers_.load() > 0) cv_.notify_all();
}

void LocalGroup::take(int from, int to, int tag, std::span<std::byte> data) {
  Mailbox* box;
  {
    std::lock_guard lock(mutex_);
    box = &mailboxes_[{from, to, tag}];
  }
  // Watch the mailbox a while before sleeping, as arrive_and_wait does: the
  // algorithms' messages follow each other within microseconds, and a sleep
  // costs a wake-up of tens of them. Only this worker takes from this mailbox,
  // so a message it sees pending stays there.
  if (box->pending.load(std::memory_order_acquire) == 0) {
    const auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
    for (uint32_t i = 1; box->pending.load(std::memory_order_acquire) == 0; ++i) {
      if (aborted_.load(std::memory_order_relaxed)) break;
      if (oversubscribed_)
        std::this_thread::yield();
      else
        cpu_relax();
      if (i % 64 == 0 && std::chrono::steady_clock::now() > spin_until) break;
    }
  }
  std::unique_lock lock(mutex_);
  bool arrived = !box->messages.empty();
  if (!arrived && !aborted_) {
    sleepers_++;
    arrived = WaitDeadline(timeout_).wait(cv_, lock, [&] { return !box->messages.empty() || aborted_; });
    sleepers_--;
  }
  if (aborted_) throw Error(abort_reason_);
  if (!arrived) {
    const std::string absent = absent_workers(to);
    abort_reason_ = fmt::format("{}: worker {} timed out after {} waiting for worker {}{}", tag_name(tag),
                                first_worker_ + to, seconds_text(timeout_), first_worker_ + from,
                                absent.empty() ? "" : " (worker(s) " + absent + " never arrived)");
    aborted_ = true;
    cv_.notify_all();
    throw Error(abort_reason_);
  }
  std::vector<std::byte> message = std::move(box->messages.front().bytes);
  box->messages.pop_front();
  box->pending.fetch_sub(1, std::memory_order_relaxed);
  lock.unlock();
  if (message.size() != data.size())
    throw Error(fmt::format("{}: worker {} sent {} bytes but worker {} expected {} bytes", tag_name(tag),
                            first_worker_ + from, message.size(), first_worker_ + to, data.size()));
  std::copy(message.begin(), message.end(), data.begin());
}

std::optional<AnyMessage> LocalGroup::take_any(int to, int tag, std::chrono::milliseconds wait) {
  if (wait < std::chrono::milliseconds(0))
    throw Error(fmt::format("recv_any: worker {} got a negative wait ({} ms)", first_worker_ + to, wait.count()));
  WaitDeadline deadline(wait);
  std::unique_lock lock(mutex_);
  for (;;) {
    if (aborted_) throw Error(abort_reason_);
    Mailbox* oldest = nullptr;
    int oldest_from = -1;
    for (int from = 0; from < size_; ++from) {
      const auto found = mailboxes_.find({from, to, tag});
      if (found == mailboxes_.end() || found->second.messages.empty()) continue;
      Mailbox& box = found->second;
      if (!oldest || box.messages.front().sequence < oldest->messages.front().sequence)
        oldest = &box, oldest_from = from;
    }
    if (oldest) {
      AnyMessage message{oldest_from, std::move(oldest->messages.front().bytes)};
      oldest->messages.pop_front();
      oldest->pending.fetch_sub(1, std::memory_order_relaxed);
      return message;
    }
    if (deadline.passed()) return std::nullopt;
    // post() and abort() notify while someone sleeps; any wake-up looks again.
    sleepers_++;
    cv_.wait_for(lock, deadline.slice());
    sleepers_--;
  }
}

size_t slice_begin(size_t count, int r, int n) {
  return count * static_cast<size_t>(r) / static_cast<size_t>(n);
}

namespace {

constexpr size_t kSumBlock = 2048;  // partial sums that stay in L1

// Every member's buffer, as published to be reduced in place.
template <typename T>
std::vector<T*> published_buffers(LocalGroup& group) {
  std::vector<T*> peers(static_cast<size_t>(group.size()));
  for (int r = 0; r < group.size(); ++r)
    peers[static_cast<size_t>(r)] = static_cast<T*>(const_cast<void*>(group.slot(r).data));
  return peers;
}

// Elements [b, b + m) of every buffer summed in member order into `sums`,
// each loop over one buffer so that it vectorizes.
void sum_block(const std::vector<float*>& peers, size_t b, size_t m, float* sums) {
  const float* first = peers[0] + b;
  for (size_t i = 0; i < m; ++i) sums[i] = first[i];
  for (size_t r = 1; r < peers.size(); ++r) {
    const float* p = peers[r] + b;
    for (size_t i = 0; i < m; ++i) sums[i] += p[i];
  }
}

// Halves: summed in fp32 and rounded once, saturating.
void sum_block(const std::vector<uint16_t*>& peers, size_t b, size_t m, uint16_t* sums) {
  float wide[kSumBlock];
  const std::span<float> block(wide, m);
  halves_to_floats({peers[0] + b, m}, block);
  for (size_t r = 1; r < peers.size(); ++r) add_halves_to_floats({peers[r] + b, m}, block);
  floats_to_halves_saturating(block, {sums, m});
}

// Sums [lo, hi) a block at a time and hands each block's sums to
// `write(peers, b, m, sums)`.
template <typename T, typename Write>
void for_each_summed_block(LocalGroup& group, size_t lo, size_t hi, Write&& write) {
  const std::vector<T*> peers = published_buffers<T>(group);
  alignas(64) T sums[kSumBlock];
  for (size_t b = lo; b < hi; b += kSumBlock) {
    const size_t m = std::min(kSumBlock, hi - b);
    sum_block(peers, b, m, sums);
    write(peers, b, m, sums);
  }
}

template <typename T>
void sum_into(LocalGroup& group, size_t lo, size_t hi, T* out) {
  for_each_summed_block<T>(group, lo, hi, [&](const std::vector<T*>&, size_t b, size_t m, const T* sums) {
    std::memcpy(out + b, sums, m * sizeof(T));
  });
}

}  // namespace

void sum_published(LocalGroup& group, size_t lo, size_t hi, float* out) { sum_into(group, lo, hi, out); }

void sum_published(LocalGroup& group, size_t lo, size_t hi, uint16_t* out) { sum_into(group, lo, hi, out); }

template <typename T>
void sum_published_to_all(LocalGroup& group, size_t lo, size_t hi) {
  for_each_summed_block<T>(group, lo, hi, [](const std::vector<T*>& peers, size_t b, size_t m, const T* sums) {
    for (T* peer : peers) std::memcpy(peer + b, sums, m * sizeof(T));
  });
}

template void sum_published_to_all<float>(LocalGroup&, size_t, size_t);
template void sum_published_to_all<uint16_t>(LocalGroup&, size_t, size_t);

namespace {

template <typename T>
uint64_t copy_slices(LocalGroup& group, int me, std::span<T> out) {
  const int n = group.size();
  uint64_t copied = 0;
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    const size_t a = slice_begin(out.size(), r, n), b = slice_begin(out.size(), r + 1, n);
    if (b > a) std::memcpy(out.data() + a, static_cast<const T*>(group.slot(r).data) + a, (b - a) * sizeof(T));
    copied += (b - a) * sizeof(T);
  }
  return copied;
}

}  // namespace

uint64_t copy_published_slices(LocalGroup& group, int me, std::span<float> out) {
  return copy_slices(group, me, out);
}

uint64_t copy_published_slices(LocalGroup& group, int me, std::span<uint16_t> out) {
  return copy_slices(group, me, out);
}

uint64_t copy_published_slices(LocalGroup& group, int me, std::span<std::byte> out) {
  return copy_slices(group, me, out);
}

LocalCommunicator::LocalCommunicator(std::shared_ptr<LocalGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {
  if (rank < 0 || rank >= group_->size())
    throw Error("local communicator: rank " + std::to_string(rank) + " outside a group of " +
                std::to_string(group_->size()));
}

void LocalCommunicator::enter(const CollectiveEntry& entry, const void* data, size_t bytes) {
  group_->slot(rank_) = {entry, data, bytes};
  group_->arrive_and_wait(rank_, entry.name());
  for (int r = 0; r < size(); ++r) {
    if (r == rank_) continue;
    const std::string mismatch = entry_mismatch(entry, rank_, group_->slot(r).entry, r, "worker");
    if (!mismatch.empty()) throw Error(mismatch);
  }
}

void LocalCommunicator::allreduce(std::span<float> data, AllreduceAlgorithm algorithm) {
  native_or_algorithm(data, CollectiveEntry::allreduce(data.size(), algorithm));
}

void LocalCommunicator::allreduce_half(std::span<uint16_t> data, AllreduceAlgorithm algorithm) {
  native_or_algorithm(data, CollectiveEntry::allreduce_half(data.size(), algorithm));
}

template <typename T>
void LocalCommunicator::native_or_algorithm(std::span<T> data, const CollectiveEntry& entry) {
  LocalGroup::CallScope in_call(*group_, rank_);
  const int n = size();
  stats_.collectives++;
  if (n == 1) return;
  enter(entry, data.data(), data.size_bytes());
  if (entry.algorithm != AllreduceAlgorithm::Native && entry.algorithm != AllreduceAlgorithm::Hierarchical) {
    // Nobody may enter the next collective, and overwrite its slot, while a
    // peer still checks it.
    group_->arrive_and_wait(rank_, entry.name());
    if constexpr (std::is_same_v<T, float>)
      return run_allreduce_algorithm(*this, data, entry.algorithm);
    else
      return run_allreduce_half_algorithm(*this, data, entry.algorithm);
  }
  // Each worker sums its own slice straight from every peer's buffer (in rank
  // order, so the result does not depend on timing) and writes it into every
  // buffer. Nobody may return, and change its buffer, while a peer still reads
  // or writes it.
  const size_t lo = slice_begin(data.size(), rank_, n), hi = slice_begin(data.size(), rank_ + 1, n);
  sum_published_to_all<T>(*group_, lo, hi);
  group_->arrive_and_wait(rank_, entry.name());
  // Read from peers: their parts of my slice; written into mine: their slices. As much the other way.
  const uint64_t moved =
      ((static_cast<uint64_t>(n) - 1) * (hi - lo) + (data.size() - (hi - lo))) * sizeof(T);
  stats_.bytes_received += moved;
  stats_.bytes_sent += moved;
}

void LocalCommunicator::broadcast(std::span<std::byte> data, int root) {
  LocalGroup::CallScope in_call(*group_, rank_);
  stats_.collectives++;
  // After the entry check every worker has the same root, so all fail alike.
  if (size() > 1) enter(CollectiveEntry::broadcast(data.size(), root), data.data(), data.size_bytes());
  if (root < 0 || root >= size())
    throw Error("broadcast: root " + std::to_string(root) + " outside a group of " + std::to_string(size()));
  if (size() == 1) return;
  if (rank_ != root) {
    if (!data.empty()) std::memcpy(data.data(), group_->slot(root).data, data.size_bytes());
    stats_.bytes_received += data.size_bytes();
  } else {
    stats_.bytes_sent += data.size_bytes() * static_cast<uint64_t>(size() - 1);
  }
  group_->arrive_and_wait(rank_, "broadcast");
}

void LocalCommunicator::send(int peer, int tag, std::span<const std::byte> data) {
  LocalGroup::CallScope in_call(*group_, rank_);
  check_peer(peer);
  group_->post(rank_, peer, tag, data);
  stats_.bytes_sent += data.size();
}

void LocalCommunicator::recv(int peer, int tag, std::span<std::byte> data) {
  LocalGroup::CallScope in_call(*group_, rank_);
  check_peer(peer);
  group_->take(peer, rank_, tag, data);
  stats_.bytes_received += data.size();
}

std::optional<AnyMessage> LocalCommunicator::recv_any(int tag, std::chrono::milliseconds wait) {
  LocalGroup::CallScope in_call(*group_, rank_);
  auto message = group_->take_any(rank_, tag, wait);
  if (message) stats_.bytes_received += message->bytes.size();
  return message;
}

void LocalCommunicator::check_peer(int peer) const {
  if (peer < 0 || peer >= size() || peer == rank_)
    throw Error(fmt::format("worker {}: no peer {} in a group of {}", rank_, peer, size()));
}

void LocalCommunicator::barrier() {
  LocalGroup::CallScope in_call(*group_, rank_);
  stats_.collectives++;
  enter(CollectiveEntry::barrier(), nullptr, 0);
  group_->arrive_and_wait(rank_, "barrier");  // nobody overwrites its slot while a peer still checks it
}

std::vector<std::vector<std::byte>> LocalCommunicator::allgatherv(std::span<const std::byte> mine) {
  LocalGroup::CallScope in_call(*group_, rank_);
  const int n = size();
  stats_.collectives++;
  std::vector<std::vector<std::byte>> all(static_cast<size_t>(n));
  enter(CollectiveEntry::allgatherv(), mine.data(), mine.size());
  for (int r = 0; r < n; ++r) {
    const auto& slot = group_->slot(r);
    const auto* bytes = static_cast<const std::byte*>(slot.data);
    all[static_cast<size_t>(r)].assign(bytes, bytes + slot.bytes);
    if (r != rank_) stats_.bytes_received += slot.bytes;
  }
  stats_.bytes_sent += mine.size() * static_cast<uint64_t>(n - 1);
  group_->arrive_and_wait(rank_, "allgatherv");  // peers read my bytes until here
  return all;
}

}  // namespace ptrain
