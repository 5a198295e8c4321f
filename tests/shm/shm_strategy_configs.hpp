#pragma once
// The shared-memory strategies as the tests take them: by their registry
// names, each one's algorithm as its options make it (shm/shm_strategies.hpp),
// so that a strategy added to the registry is tested with the others.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "plan/strategy_registry.hpp"

namespace ptrain::test {

// The config `name`'s options make (their defaults).
inline ShmConfig shm_config_of(std::string_view name) {
  const auto choice = StrategyRegistry::make(name);
  const auto config = choice ? shared_memory_config(*choice) : std::nullopt;
  if (!config) throw std::invalid_argument(std::string(name) + " is not a shared-memory strategy");
  return *config;
}

// `c` with `name`'s algorithm (its name and shared parameters), the rest kept.
inline void set_algorithm(ShmConfig& c, std::string_view name) {
  const ShmConfig made = shm_config_of(name);
  c.algorithm = made.algorithm;
  c.make_parameters = made.make_parameters;
}

// Every shared-memory strategy in the registry, in its order.
inline std::vector<std::string> shm_strategies() {
  std::vector<std::string> names;
  for (const auto name : StrategyRegistry::names())
    if (shared_memory_config(*StrategyRegistry::make(name))) names.emplace_back(name);
  return names;
}

}  // namespace ptrain::test
