#include "comm/collective_entry.hpp"

#include <fmt/format.h>

namespace ptrain {

namespace {

const char* count_unit(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::Allreduce:
      return "floats";
    case CollectiveKind::AllreduceHalf:
      return "halves";
    default:
      return "bytes";
  }
}

}  // namespace

std::string CollectiveEntry::name() const {
  switch (kind) {
    case CollectiveKind::Allreduce:
      return algorithm == AllreduceAlgorithm::Native ? "allreduce" : to_string(algorithm) + " allreduce";
    case CollectiveKind::Broadcast:
      return "broadcast";
    case CollectiveKind::Barrier:
      return "barrier";
    case CollectiveKind::Allgatherv:
      return "allgatherv";
    case CollectiveKind::AllreduceHalf:
      return algorithm == AllreduceAlgorithm::Native ? "fp16 allreduce"
                                                     : "fp16 " + to_string(algorithm) + " allreduce";
  }
  return "collective " + std::to_string(static_cast<int>(kind));
}

CollectiveEntry::Token CollectiveEntry::token() const {
  return {static_cast<uint64_t>(kind), static_cast<uint64_t>(algorithm), count, static_cast<uint64_t>(root)};
}

CollectiveEntry CollectiveEntry::from_token(const Token& token) {
  return {static_cast<CollectiveKind>(token[0]), static_cast<AllreduceAlgorithm>(token[1]), token[2],
          static_cast<int64_t>(token[3])};
}

std::string entry_mismatch(const CollectiveEntry& mine, int my_rank, const CollectiveEntry& theirs,
                           int their_rank, std::string_view who) {
  const std::string what = mine.name();
  if (theirs.kind != mine.kind || theirs.algorithm != mine.algorithm)
    return fmt::format("{}: {} {} entered {} while {} {} entered {}", what, who, their_rank, theirs.name(),
                       who, my_rank, what);
  if (theirs.count != mine.count)
    return fmt::format("{}: {} {} brought {} {} but {} {} brought {}", what, who, my_rank, mine.count,
                       count_unit(mine.kind), who, their_rank, theirs.count);
  if (theirs.root != mine.root)
    return fmt::format("{}: {} {} named root {} but {} {} named root {}", what, who, my_rank, mine.root, who,
                       their_rank, theirs.root);
  return "";
}

std::string collective_timeout(std::string_view what, int my_rank, std::chrono::milliseconds timeout,
                               const std::string& missing, std::string_view who) {
  return fmt::format("{}: timed out after {} waiting for {}(s) {} (on {} {})", what, seconds_text(timeout),
                     who, missing, who, my_rank);
}

std::string seconds_text(std::chrono::milliseconds t) {
  return fmt::format("{:g} s", static_cast<double>(t.count()) / 1000.0);
}

}  // namespace ptrain
