#include "sync/strategy.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ptrain {

// The plan refuses checkpoints for a strategy without them (its options have no
// `checkpoints` trait), so these are reached only by a library caller who
// skipped the plan.
void WorkerStrategy::save_state(StateWriter&) { throw Error("this strategy does not write checkpoints"); }
void WorkerStrategy::load_state(StateReader&) { throw Error("this strategy does not resume from checkpoints"); }

std::string diverged_loss(int worker, float loss, uint64_t step) {
  return fmt::format("worker {}: the loss became {} at step {} (diverged; try a lower learning rate)", worker, loss,
                     step);
}

std::string WorkerStrategy::agree_to_stop(Communicator& comm, const std::string& mine) {
  float any = mine.empty() ? 0.0f : 1.0f;
  comm.allreduce(std::span(&any, 1));
  if (any == 0) return {};
  for (const auto& why : comm.allgatherv(std::as_bytes(std::span(mine.data(), mine.size()))))
    if (!why.empty()) return {reinterpret_cast<const char*>(why.data()), why.size()};
  return {};
}

}  // namespace ptrain
