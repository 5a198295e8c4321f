#include "optim/optimizer.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "optim/adam.hpp"
#include "optim/sgd.hpp"

namespace ptrain {

std::string to_string(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Sgd:
      return "sgd";
    case OptimizerKind::Momentum:
      return "momentum";
    case OptimizerKind::Nesterov:
      return "nesterov";
    case OptimizerKind::Adam:
      return "adam";
  }
  throw Error(fmt::format("unknown optimizer kind {}", static_cast<int>(kind)));
}

namespace {

// The comparisons are written so that NaN fails them too.
void require_positive(const char* field, float value) {
  if (!(std::isfinite(value) && value > 0.0f)) {
    throw Error(fmt::format("{} must be > 0 (got {})", field, value));
  }
}

void require_non_negative(const char* field, float value) {
  if (!(std::isfinite(value) && value >= 0.0f)) {
    throw Error(fmt::format("{} must be >= 0 (got {})", field, value));
  }
}

void require_unit_interval(const char* field, float value) {
  if (!(value >= 0.0f && value < 1.0f)) {
    throw Error(fmt::format("{} must be in [0, 1) (got {})", field, value));
  }
}

}  // namespace

void validate_optimizer_config(const OptimizerConfig& config) {
  require_positive("optimizer.lr", config.lr);
  require_unit_interval("optimizer.momentum", config.momentum);
  require_non_negative("optimizer.weight_decay", config.weight_decay);
  require_unit_interval("optimizer.beta1", config.beta1);
  require_unit_interval("optimizer.beta2", config.beta2);
  require_positive("optimizer.eps", config.eps);
}

float lr_at(const OptimizerConfig& config, double epoch) {
  return static_cast<float>(static_cast<double>(config.lr) * config.schedule.factor(epoch));
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, size_t size) {
  validate_optimizer_config(config);
  switch (config.kind) {
    case OptimizerKind::Sgd:
    case OptimizerKind::Momentum:
    case OptimizerKind::Nesterov:
      return std::make_unique<SgdOptimizer>(config, size);
    case OptimizerKind::Adam:
      return std::make_unique<AdamOptimizer>(config, size);
  }
  throw Error(fmt::format("unknown optimizer kind {}", static_cast<int>(config.kind)));
}

}  // namespace ptrain
