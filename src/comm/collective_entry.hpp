#pragma once
// What a worker brings to a collective, checked on entry by every backend
// before any data moves: all workers must be in the same collective (same kind
// and all-reduce algorithm) with the same element count and, for a broadcast,
// the same root. The messages here are shared by the backends, so a mistake
// reads the same on threads and under mpirun ("worker" on threads, "rank" under
// mpirun).
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "comm/communicator.hpp"

namespace ptrain {

// AllreduceHalf (Communicator::allreduce_half) is a collective of its own: a
// worker in it never pairs with one in a float all-reduce.
enum class CollectiveKind : uint8_t { Allreduce, Broadcast, Barrier, Allgatherv, AllreduceHalf };

struct CollectiveEntry {
  CollectiveKind kind = CollectiveKind::Barrier;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::Native;  // all-reduce only
  uint64_t count = 0;  // all-reduce: floats (halves for AllreduceHalf); broadcast: bytes
  int64_t root = 0;    // broadcast only

  static CollectiveEntry allreduce(size_t floats, AllreduceAlgorithm algorithm) {
    return {CollectiveKind::Allreduce, algorithm, floats, 0};
  }
  static CollectiveEntry allreduce_half(size_t halves, AllreduceAlgorithm algorithm) {
    return {CollectiveKind::AllreduceHalf, algorithm, halves, 0};
  }
  static CollectiveEntry broadcast(size_t bytes, int root) {
    return {CollectiveKind::Broadcast, AllreduceAlgorithm::Native, bytes, root};
  }
  static CollectiveEntry barrier() { return {CollectiveKind::Barrier, AllreduceAlgorithm::Native, 0, 0}; }
  static CollectiveEntry allgatherv() {
    return {CollectiveKind::Allgatherv, AllreduceAlgorithm::Native, 0, 0};
  }

  // "allreduce", "ring allreduce", "fp16 allreduce", "fp16 ring allreduce",
  // "broadcast", "barrier", "allgatherv".
  std::string name() const;

  // The fixed-size form one backend sends to its peers.
  using Token = std::array<uint64_t, 4>;
  Token token() const;
  static CollectiveEntry from_token(const Token& token);
};

// "" when `theirs` (worker `their_rank`'s) agrees with `mine`; otherwise the
// error for worker `my_rank`, naming both, e.g. "allreduce: rank 0 brought 7
// floats but rank 2 brought 8" ("halves" in an fp16 all-reduce) or
// "allreduce: rank 2 entered barrier while rank 0 entered allreduce". `who` is
// "worker" or "rank".
std::string entry_mismatch(const CollectiveEntry& mine, int my_rank, const CollectiveEntry& theirs,
                           int their_rank, std::string_view who);

// "allreduce: timed out after 0.5 s waiting for rank(s) 2, 3 (on rank 0)": the
// collective named `what` (CollectiveEntry::name()), the comma-separated ranks
// that never arrived, and the rank that gave up on them.
std::string collective_timeout(std::string_view what, int my_rank, std::chrono::milliseconds timeout,
                               const std::string& missing, std::string_view who);

// "0.5 s" for error messages.
std::string seconds_text(std::chrono::milliseconds t);

}  // namespace ptrain
