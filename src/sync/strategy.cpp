#include "sync/strategy.hpp"

#include <fmt/format.h>

#include "comm/allgather_values.hpp"
#include "core/error.hpp"

namespace ptrain {

// The plan refuses checkpoints for a strategy without them (its options have no
// `checkpoints` trait), so these are reached only by a library caller who
// skipped the plan.
void WorkerStrategy::save_state(StateWriter&) { throw Error("this strategy does not write checkpoints"); }
void WorkerStrategy::load_state(StateReader&) { throw Error("this strategy does not resume from checkpoints"); }

std::optional<Metrics> WorkerStrategy::evaluate(Model& model, const Dataset& data, int rank) {
  if (rank != 0) return std::nullopt;
  sync_for_evaluation();
  return model.evaluate(data);
}

std::vector<float> WorkerStrategy::whole_parameters(Model& model, int rank) {
  if (rank != 0) return {};
  sync_for_evaluation();
  const auto p = model.params();
  return {p.begin(), p.end()};
}

std::string diverged_loss(int worker, float loss, uint64_t step) {
  return fmt::format("worker {}: the loss became {} at step {} (diverged; try a lower learning rate)", worker, loss,
                     step);
}

StepStop WorkerStrategy::agree_to_stop(Communicator& comm, const StepStop& mine) {
  float any = mine.any() ? 1.0f : 0.0f;
  comm.allreduce(std::span(&any, 1));
  if (any == 0) return {};
  for (auto& said : allgather_kind_and_text(comm, static_cast<uint8_t>(mine.kind), mine.why))
    if (const auto kind = static_cast<StepStop::Kind>(said.kind); kind != StepStop::Kind::None)
      return {kind, std::move(said.text)};
  return {};
}

}  // namespace ptrain
