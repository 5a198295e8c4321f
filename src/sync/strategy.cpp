#include "sync/strategy.hpp"

#include "core/error.hpp"
#include "sync/hybrid_allreduce.hpp"
#include "sync/parameter_server_strategy.hpp"
#include "sync/sequential_turns.hpp"

namespace ptrain {

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"hybrid", "sequential", "ps-sync", "ps-backup", "ssp", "async"};
  return names;
}

bool uses_parameter_servers(const std::string& strategy) {
  return strategy == "ps-sync" || strategy == "ps-backup" || strategy == "ssp" || strategy == "async";
}

StrategyConfig effective_strategy_config(StrategyConfig config) {
  DgcConfig& dgc = config.codec.dgc;
  if (config.codec.name != "dgc" || !dgc.momentum_correction) return config;
  if (config.optimizer.kind != OptimizerKind::Momentum) {
    dgc.momentum_correction = false;
    return config;
  }
  dgc.momentum = config.optimizer.momentum;
  config.optimizer.kind = OptimizerKind::Sgd;
  return config;
}

void validate_strategy_config(const StrategyConfig& config, int workers) {
  validate_codec_config(config.codec);
  if (config.time_limit_seconds < 0)
    throw Error("--time-limit must be >= 0 seconds (got " + std::to_string(config.time_limit_seconds) + ")");
  if (config.time_limit_seconds > 0 && !uses_parameter_servers(config.name))
    throw Error("--time-limit: only the parameter-server strategies (ps-sync, ps-backup, ssp, async) stop on time");
  if (uses_parameter_servers(config.name)) return validate_parameter_server_config(config, workers);
  if (config.name != "hybrid" && config.codec.name != "none")
    throw Error("--compress " + config.codec.name + ": the " + config.name +
                " strategy does not compress gradients (use hybrid or a parameter server)");
  if (config.name != "hybrid" && config.name != "sequential") {
    std::string names;
    for (const auto& n : strategy_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error("--strategy: unknown strategy '" + config.name + "' (choose " + names + ")");
  }
}

std::unique_ptr<StrategyGroup> make_strategy_group(const StrategyConfig& config, size_t num_params,
                                                   int workers) {
  validate_strategy_config(config, workers);
  if (config.name == "hybrid") return std::make_unique<HybridGroup>(effective_strategy_config(config));
  if (uses_parameter_servers(config.name))
    return std::make_unique<ParameterServerGroup>(effective_strategy_config(config), num_params, workers);
  return std::make_unique<SequentialGroup>(config, num_params, workers);
}

}  // namespace ptrain
