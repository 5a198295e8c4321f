#include "run/stop_vote.hpp"

#include <fmt/format.h>

#include <cmath>

#include "comm/allgather_values.hpp"
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
  std::string first_diverged_and_left, first_left, test;
  bool all_left = true;
  for (const auto& [kind, why] : allgather_kind_and_text(comm, static_cast<uint8_t>(mine.kind), mine.why)) {
    using Kind = WorkerStatus::Kind;
    switch (static_cast<Kind>(kind)) {
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
