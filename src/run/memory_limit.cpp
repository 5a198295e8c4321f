#include "run/memory_limit.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/memory_size.hpp"

namespace ptrain {

namespace {

std::string bytes_text(uint64_t bytes) { return size_text(static_cast<double>(bytes)); }

}  // namespace

WorkerMemory memory_of(const WorkerStrategy& side, Model& replica, const OptimizerConfig& optimizer) {
  if (const auto counted = side.memory()) return *counted;
  const uint64_t slots = make_optimizer(optimizer, 0)->state_slots();
  return WorkerMemory{(2 + slots) * replica.params().size() * sizeof(float), 0};
}

void check_memory_limit(uint64_t limit, int rank, const WorkerMemory& held, bool split, bool trained) {
  if (limit == 0 || held.total() <= limit) return;
  throw Error(fmt::format(
      "run.memory_limit: worker {} {} {} to train ({} of parameters, gradients and optimizer state{}), over the "
      "limit of {}{}",
      rank, trained ? "holds" : "would hold", bytes_text(held.total()), bytes_text(held.state_bytes),
      held.activation_bytes > 0 ? fmt::format(", {} of activations", bytes_text(held.activation_bytes)) : "",
      bytes_text(limit),
      !split ? "; a pipeline (--strategy pipeline) keeps only a stage of the model's layers on each worker"
      : held.activation_bytes > 0
          ? "; more stages (strategy.stages), or fewer micro-batches' activations held at once (strategy.schedule "
            "1f1b), would hold less"
          : "; more stages (strategy.stages) would hold less"));
}

std::string memory_note(const std::vector<WorkerMemory>& workers, uint64_t limit) {
  size_t most = 0;
  for (size_t r = 1; r < workers.size(); ++r)
    if (workers[r].total() > workers[most].total()) most = r;
  const WorkerMemory& m = workers.at(most);
  return fmt::format("worker {} held the most to train, {} ({} of state, {} of activations), of the limit of {}", most,
                     bytes_text(m.total()), bytes_text(m.state_bytes), bytes_text(m.activation_bytes), bytes_text(limit));
}

}  // namespace ptrain
