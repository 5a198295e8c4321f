#include "comm/local_group.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ptrain {

LocalGroup::LocalGroup(int size, std::chrono::milliseconds timeout)
    : size_(size), timeout_(timeout), slots_(static_cast<size_t>(std::max(size, 0))) {
  if (size <= 0) throw Error("local group: needs at least one worker (got " + std::to_string(size) + ")");
  arrived_ = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) arrived_[static_cast<size_t>(r)] = false;
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

void LocalGroup::arrive_and_wait(int rank, const char* what) {
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
  constexpr int kSpins = 20000;
  for (int i = 0; i < kSpins; ++i) {
    if (generation_.load(std::memory_order_acquire) != my_generation) return;
    if (aborted_.load(std::memory_order_relaxed)) throw_abort_reason();
    if (i % 64 == 63) std::this_thread::yield();  // more workers than cores: let the late one run
  }
  std::unique_lock lock(mutex_);
  sleepers_++;
  const bool done = cv_.wait_for(lock, timeout_, [&] { return generation_.load() != my_generation || aborted_; });
  sleepers_--;
  if (generation_.load() != my_generation) return;
  if (aborted_) throw Error(abort_reason_);
  if (!done) {
    std::string missing;
    for (int r = 0; r < size_; ++r)
      if (!arrived_[static_cast<size_t>(r)]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    abort_reason_ = fmt::format("{}: timed out after {:g} s waiting for worker(s) {}", what,
                                static_cast<double>(timeout_.count()) / 1000.0, missing);
    aborted_ = true;
    cv_.notify_all();
    throw Error(abort_reason_);
  }
}

LocalCommunicator::LocalCommunicator(std::shared_ptr<LocalGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {
  if (rank < 0 || rank >= group_->size())
    throw Error("local communicator: rank " + std::to_string(rank) + " outside a group of " +
                std::to_string(group_->size()));
}

void LocalCommunicator::publish(void* data, size_t bytes, const char* what) {
  group_->slot(rank_) = {data, bytes};
  group_->arrive_and_wait(rank_, what);
  for (int r = 0; r < size(); ++r) {
    const size_t other = group_->slot(r).bytes;
    if (other != bytes)
      throw Error(std::string(what) + ": worker " + std::to_string(rank_) + " brought " +
                  std::to_string(bytes) + " bytes but worker " + std::to_string(r) + " brought " +
                  std::to_string(other) + " bytes");
  }
}

void LocalCommunicator::allreduce(std::span<float> data, AllreduceAlgorithm) {
  const int n = size();
  stats_.collectives++;
  if (n == 1) return;
  publish(data.data(), data.size_bytes(), "allreduce");
  // Each worker sums its own slice straight from every peer's buffer (in rank
  // order, so the result does not depend on timing), then copies the others' slices.
  const size_t count = data.size();
  auto slice_begin = [&](int r) { return count * static_cast<size_t>(r) / static_cast<size_t>(n); };
  const size_t lo = slice_begin(rank_), hi = slice_begin(rank_ + 1);
  std::vector<const float*> peers(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) peers[static_cast<size_t>(r)] = static_cast<const float*>(group_->slot(r).data);
  float* mine = data.data();
  for (size_t i = lo; i < hi; ++i) {
    float sum = peers[0][i];
    for (int r = 1; r < n; ++r) sum += peers[static_cast<size_t>(r)][i];
    mine[i] = sum;
  }
  group_->arrive_and_wait(rank_, "allreduce");
  for (int r = 0; r < n; ++r) {
    if (r == rank_) continue;
    const size_t a = slice_begin(r), b = slice_begin(r + 1);
    std::memcpy(mine + a, peers[static_cast<size_t>(r)] + a, (b - a) * sizeof(float));
  }
  // Nobody may change its buffer while a peer still copies from it.
  group_->arrive_and_wait(rank_, "allreduce");
  // Read from peers: their parts of my slice, then their slices. They read as much from me.
  const uint64_t moved = ((static_cast<uint64_t>(n) - 1) * (hi - lo) + (count - (hi - lo))) * sizeof(float);
  stats_.bytes_received += moved;
  stats_.bytes_sent += moved;
}

void LocalCommunicator::broadcast(std::span<std::byte> data, int root) {
  if (root < 0 || root >= size())
    throw Error("broadcast: root " + std::to_string(root) + " outside a group of " + std::to_string(size()));
  stats_.collectives++;
  if (size() == 1) return;
  publish(data.data(), data.size_bytes(), "broadcast");
  if (rank_ != root) {
    std::memcpy(data.data(), group_->slot(root).data, data.size_bytes());
    stats_.bytes_received += data.size_bytes();
  } else {
    stats_.bytes_sent += data.size_bytes() * static_cast<uint64_t>(size() - 1);
  }
  group_->arrive_and_wait(rank_, "broadcast");
}

void LocalCommunicator::barrier() {
  stats_.collectives++;
  group_->arrive_and_wait(rank_, "barrier");
}

}  // namespace ptrain
