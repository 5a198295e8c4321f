#include "run/stop_vote.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "sync/strategy.hpp"

namespace ptrain {

std::string step_divergence(int rank, float loss, size_t step, uint64_t saturated_now,
                            uint64_t& saturated_before) {
  std::string why;
  if (!std::isfinite(loss))
    why = diverged_loss(rank, loss, step);
  else if (saturated_now > saturated_before)
    why = fmt::format(
        "worker {}: {} gradient value(s) beyond fp16's range (+-65504) at step {} (diverged; try a "
        "lower learning rate)",
        rank, saturated_now - saturated_before, step);
  saturated_before = saturated_now;
  return why;
}

std::string run_stop_verdict(Communicator& comm, const WorkerStatus& mine) {
  // Each worker's kind as one byte, then its reason.
  std::vector<std::byte> said(1 + mine.why.size());
  said[0] = static_cast<std::byte>(mine.kind);
  std::memcpy(said.data() + 1, mine.why.data(), mine.why.size());
  std::string first_diverged_and_left, first_left, test;
  bool all_left = true;
  for (const auto& bytes : comm.allgatherv(said)) {
    using Kind = WorkerStatus::Kind;
    const auto kind = static_cast<Kind>(bytes.at(0));
    const std::string why(reinterpret_cast<const char*>(bytes.data()) + 1, bytes.size() - 1);
    switch (kind) {
      case Kind::Diverged:
        return why;
      case Kind::TestDiverged:
        test = why;
        [[fallthrough]];
      case Kind::Training:
        all_left = false;
        break;
      case Kind::DivergedAndLeft:
        if (first_diverged_and_left.empty()) first_diverged_and_left = why;
        [[fallthrough]];
      case Kind::Left:
        if (first_left.empty()) first_left = why;
        break;
    }
  }
  if (all_left && !first_diverged_and_left.empty()) return "every worker left; " + first_diverged_and_left;
  if (all_left) throw InterruptedError("every worker failed and left the run; the first: " + first_left);
  return test;
}

}  // namespace ptrain
