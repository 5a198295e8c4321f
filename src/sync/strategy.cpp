#include "sync/strategy.hpp"

#include "core/error.hpp"
#include "sync/hybrid_allreduce.hpp"
#include "sync/sequential_turns.hpp"

namespace ptrain {

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"hybrid", "sequential"};
  return names;
}

std::unique_ptr<StrategyGroup> make_strategy_group(const StrategyConfig& config, size_t num_params,
                                                   int workers) {
  if (config.name == "hybrid") return std::make_unique<HybridGroup>(config);
  if (config.name == "sequential") return std::make_unique<SequentialGroup>(config, num_params, workers);
  throw Error("--strategy: unknown strategy '" + config.name + "' (choose hybrid or sequential)");
}

}  // namespace ptrain
