#include "comm/hierarchical_communicator.hpp"

#include <fmt/format.h>

#include <cstring>
#include <type_traits>

#include "comm/allreduce_algorithms.hpp"
#include "comm/message_tags.hpp"
#include "core/error.hpp"
#include "core/run_failure.hpp"

namespace ptrain {

namespace {

// What `comm` moved since `before`, added to `stats`.
void add_traffic(CommStats& stats, const Communicator& comm, const CommStats& before) {
  stats.bytes_sent += comm.stats().bytes_sent - before.bytes_sent;
  stats.bytes_received += comm.stats().bytes_received - before.bytes_received;
}

}  // namespace

HierarchicalCommunicator::HierarchicalCommunicator(std::shared_ptr<LocalGroup> threads, int thread,
                                                   Communicator& across, Communicator& mesh)
    : group_(std::move(threads)),
      thread_(thread),
      threads_(group_->size()),
      rank_(across.rank()),
      ranks_(across.size()),
      across_(across),
      mesh_(mesh) {
  if (thread < 0 || thread >= threads_)
    throw Error(fmt::format("hierarchical communicator: thread {} outside a rank of {} threads", thread, threads_));
  if (mesh.size() != ranks_ || mesh.rank() != rank_)
    throw Error(fmt::format("hierarchical communicator: the mesh is rank {} of {}, the across communicator rank {} of {}",
                            mesh.rank(), mesh.size(), rank_, ranks_));
  if (group_->first_worker() != rank_ * threads_)
    throw Error(fmt::format("hierarchical communicator: rank {}'s threads are workers from {}, not {}", rank_,
                            rank_ * threads_, group_->first_worker()));
  // Composed tags (message_tags.hpp) must stay within what MPI guarantees
  // (MPI_TAG_UB >= 32767) or what OpenMPI 4.1 gives (2^31 - 1 for ob1,
  // 2^23 - 1 for ucx): run.local_workers allows 256 threads, 2^21 tags.
  if (static_cast<int64_t>(threads_) * threads_ * kTagSpan > (int64_t{1} << 23))
    throw Error(fmt::format("hierarchical communicator: {} threads in a rank are too many for MPI's tags",
                            threads_));
}

int HierarchicalCommunicator::thread_tag(int tag, int from, int to) const {
  return tag + kTagSpan * (from * threads_ + to);
}

template <typename Call>
void HierarchicalCommunicator::between_ranks(const std::string& what, Call&& call) {
  auto named = [&](const char* inner) {
    return fmt::format("{}: worker {} (thread {} of rank {}) failed between the ranks, where rank k's thread t "
                       "is worker k x {} + t: {}",
                       what, rank(), thread_, rank_, threads_, inner);
  };
  try {
    call();
  } catch (const InterruptedError& e) {
    throw InterruptedError(named(e.what()));
  } catch (const Error& e) {
    throw Error(named(e.what()));
  }
}

void HierarchicalCommunicator::check_peer(int peer) const {
  if (peer < 0 || peer >= size() || peer == rank())
    throw Error(fmt::format("worker {}: no peer {} in a group of {}", rank(), peer, size()));
}

void HierarchicalCommunicator::enter(const CollectiveEntry& entry, const void* data, size_t bytes) {
  const std::string what = entry.name();
  // This rank's threads, in shared memory: a thread that never arrives is named.
  group_->slot(thread_) = {entry, data, bytes};
  group_->arrive_and_wait(thread_, what);
  std::string mismatch;  // raised after the exchange below, which the other ranks wait for
  for (int u = 0; u < threads_ && mismatch.empty(); ++u)
    if (u != thread_) mismatch = entry_mismatch(entry, rank(), group_->slot(u).entry, worker(rank_, u), "worker");
  // The other ranks: thread t with thread t of each, in pairs (round k: to
  // r + k, from r - k). A rank whose threads have not all arrived answers no
  // one, so it is named with all its workers. Every round is done before a
  // mismatch is raised, here or above, so that no rank waits for a token
  // never sent.
  const CollectiveEntry::Token token = entry.token();
  std::vector<CollectiveEntry::Token> theirs(static_cast<size_t>(ranks_));
  for (int k = 1; k < ranks_; ++k) {
    const int to = (rank_ + k) % ranks_, from = (rank_ + ranks_ - k) % ranks_;
    try {
      across_.sendrecv(to, std::as_bytes(std::span(token)), from,
                       std::as_writable_bytes(std::span(theirs[static_cast<size_t>(from)])), kTagHierarchicalEntry);
    } catch (const Error& e) {
      if (!mismatch.empty()) throw Error(mismatch);  // what this worker found itself comes first
      const std::string why = fmt::format("{}: worker {} gave up waiting for rank {} (workers {} to {}): {}", what,
                                          rank(), from, worker(from, 0), worker(from, threads_ - 1), e.what());
      if (dynamic_cast<const InterruptedError*>(&e)) throw InterruptedError(why);
      throw Error(why);
    }
  }
  for (int r = 0; r < ranks_ && mismatch.empty(); ++r)
    if (r != rank_)
      mismatch = entry_mismatch(entry, rank(), CollectiveEntry::from_token(theirs[static_cast<size_t>(r)]),
                                worker(r, thread_), "worker");
  if (!mismatch.empty()) throw Error(mismatch);
  // Every thread of this rank is past both checks, and none overwrites its
  // slot (entering the next collective) while a sibling still reads it.
  group_->arrive_and_wait(thread_, what);
}

template <typename T>
void HierarchicalCommunicator::reduce(std::span<T> data, const CollectiveEntry& entry) {
  LocalGroup::CallScope in_call(*group_, thread_);
  stats_.collectives++;
  if (size() == 1) return;
  enter(entry, data.data(), data.size_bytes());
  constexpr bool floats = std::is_same_v<T, float>;
  const AllreduceAlgorithm algorithm = entry.algorithm;
  if (algorithm != AllreduceAlgorithm::Native && algorithm != AllreduceAlgorithm::Hierarchical) {
    if constexpr (floats)
      return run_allreduce_algorithm(*this, data, algorithm);
    else
      return run_allreduce_half_algorithm(*this, data, algorithm);
  }
  // 1. Within the rank: thread t sums slice t of every thread's buffer, in thread order.
  const size_t lo = slice_begin(data.size(), thread_, threads_), hi = slice_begin(data.size(), thread_ + 1, threads_);
  sum_published(*group_, lo, hi, data.data());
  // 2. Between the ranks: slice t with thread t of every other rank, on this thread's own communicator.
  if (ranks_ > 1) {
    const std::span<T> slice = data.subspan(lo, hi - lo);
    const CommStats before = across_.stats();
    between_ranks(entry.name(), [&] {
      if (algorithm == AllreduceAlgorithm::Native) {
        if constexpr (floats)
          across_.allreduce(slice, AllreduceAlgorithm::Native);
        else
          across_.allreduce_half(slice, AllreduceAlgorithm::Native);
      } else if constexpr (floats) {  // the entry is checked: straight to the algorithm
        run_allreduce_algorithm(across_, slice, AllreduceAlgorithm::Ring);
      } else {
        run_allreduce_half_algorithm(across_, slice, AllreduceAlgorithm::Ring);
      }
    });
    add_traffic(stats_, across_, before);
  }
  // 3. Within the rank: every other slice from the thread that owns it.
  group_->arrive_and_wait(thread_, entry.name());
  const uint64_t copied = copy_published_slices(*group_, thread_, data);
  group_->arrive_and_wait(thread_, entry.name());  // nobody changes its buffer while a sibling copies from it
  const uint64_t moved = (static_cast<uint64_t>(threads_) - 1) * (hi - lo) * sizeof(T) + copied;
  stats_.bytes_sent += moved;
  stats_.bytes_received += moved;
}

void HierarchicalCommunicator::allreduce(std::span<float> data, AllreduceAlgorithm algorithm) {
  reduce(data, CollectiveEntry::allreduce(data.size(), algorithm));
}

void HierarchicalCommunicator::allreduce_half(std::span<uint16_t> data, AllreduceAlgorithm algorithm) {
  reduce(data, CollectiveEntry::allreduce_half(data.size(), algorithm));
}

void HierarchicalCommunicator::broadcast(std::span<std::byte> data, int root) {
  LocalGroup::CallScope in_call(*group_, thread_);
  stats_.collectives++;
  // After the entry check every worker has the same root, so all fail alike.
  enter(CollectiveEntry::broadcast(data.size(), root), data.data(), data.size_bytes());
  if (root < 0 || root >= size())
    throw Error("broadcast: root " + std::to_string(root) + " outside a group of " + std::to_string(size()));
  if (size() == 1) return;
  const int root_rank = root / threads_, root_thread = root % threads_;
  // Slice t goes from the root's rank to every other on thread t's communicator.
  const size_t lo = slice_begin(data.size(), thread_, threads_), hi = slice_begin(data.size(), thread_ + 1, threads_);
  const std::span<std::byte> slice = data.subspan(lo, hi - lo);
  if (rank_ == root_rank && thread_ != root_thread && !slice.empty()) {
    std::memcpy(slice.data(), static_cast<const std::byte*>(group_->slot(root_thread).data) + lo, slice.size());
    stats_.bytes_received += slice.size();
  }
  if (ranks_ > 1) {
    const CommStats before = across_.stats();
    between_ranks("broadcast", [&] { across_.broadcast(slice, root_rank); });
    add_traffic(stats_, across_, before);
  }
  group_->arrive_and_wait(thread_, "broadcast");
  if (!(rank_ == root_rank && thread_ == root_thread))
    stats_.bytes_received += copy_published_slices(*group_, thread_, data);
  group_->arrive_and_wait(thread_, "broadcast");  // nobody changes its buffer while a sibling copies from it
}

void HierarchicalCommunicator::barrier() {
  LocalGroup::CallScope in_call(*group_, thread_);
  stats_.collectives++;
  enter(CollectiveEntry::barrier(), nullptr, 0);
}

std::vector<std::vector<std::byte>> HierarchicalCommunicator::allgatherv(std::span<const std::byte> mine) {
  LocalGroup::CallScope in_call(*group_, thread_);
  stats_.collectives++;
  enter(CollectiveEntry::allgatherv(), mine.data(), mine.size());
  // Between the ranks, thread t gathers the bytes of thread t of every rank
  // (each worker's bytes cross to each other rank once) ...
  std::vector<std::vector<std::byte>> column;
  if (ranks_ > 1) {
    const CommStats before = across_.stats();
    between_ranks("allgatherv", [&] { column = across_.allgatherv(mine); });
    add_traffic(stats_, across_, before);
  } else {
    column.emplace_back(mine.begin(), mine.end());
  }
  // ... and the threads of the rank read each other's columns.
  group_->slot(thread_).data = &column;
  group_->arrive_and_wait(thread_, "allgatherv");
  std::vector<std::vector<std::byte>> all(static_cast<size_t>(size()));
  for (int u = 0; u < threads_; ++u) {
    const auto& theirs = *static_cast<const std::vector<std::vector<std::byte>>*>(group_->slot(u).data);
    for (int r = 0; r < ranks_; ++r) {
      const auto& part = theirs[static_cast<size_t>(r)];
      all[static_cast<size_t>(worker(r, u))] = part;  // copied: siblings read this column too
      if (u != thread_) stats_.bytes_received += part.size();
    }
  }
  group_->arrive_and_wait(thread_, "allgatherv");  // siblings read my column until here
  return all;
}

void HierarchicalCommunicator::send(int peer, int tag, std::span<const std::byte> data) {
  LocalGroup::CallScope in_call(*group_, thread_);
  check_peer(peer);
  const int peer_rank = peer / threads_, peer_thread = peer % threads_;
  if (peer_rank == rank_)
    group_->post(thread_, peer_thread, tag, data);
  else
    between_ranks(tag_name(tag), [&] { mesh_.send(peer_rank, thread_tag(tag, thread_, peer_thread), data); });
  stats_.bytes_sent += data.size();
}

void HierarchicalCommunicator::recv(int peer, int tag, std::span<std::byte> data) {
  LocalGroup::CallScope in_call(*group_, thread_);
  check_peer(peer);
  const int peer_rank = peer / threads_, peer_thread = peer % threads_;
  if (peer_rank == rank_)
    group_->take(peer_thread, thread_, tag, data);
  else
    between_ranks(tag_name(tag), [&] { mesh_.recv(peer_rank, thread_tag(tag, peer_thread, thread_), data); });
  stats_.bytes_received += data.size();
}

void HierarchicalCommunicator::sendrecv(int to, int send_tag, std::span<const std::byte> out, int from, int recv_tag,
                                        std::span<std::byte> in) {
  const int to_rank = to / threads_, from_rank = from / threads_;
  if (to_rank == rank_ || from_rank == rank_) {
    // A message within the rank is posted at once, so sending first never
    // waits on a peer that sends first too; a message to another rank waits
    // only for its receiver to post the receive.
    send(to, send_tag, out);
    recv(from, recv_tag, in);
    return;
  }
  // Both in other ranks: both at once, on the mesh.
  LocalGroup::CallScope in_call(*group_, thread_);
  check_peer(to);
  check_peer(from);
  between_ranks(tag_name(recv_tag), [&] {
    mesh_.sendrecv(to_rank, thread_tag(send_tag, thread_, to % threads_), out, from_rank,
                   thread_tag(recv_tag, from % threads_, thread_), in);
  });
  stats_.bytes_sent += out.size();
  stats_.bytes_received += in.size();
}

void HierarchicalCommunicator::interrupt(const std::string& reason) {
  group_->abort(reason);
  across_.interrupt(reason);
  mesh_.interrupt(reason);
}

}  // namespace ptrain
