#include "plan/strategy_registry.hpp"

namespace ptrain {

bool takes_codec(const StrategyChoice& s) {
  return std::visit(
      [](const auto& o) {
        if constexpr (requires { std::decay_t<decltype(o)>::takes_codec; }) return std::decay_t<decltype(o)>::takes_codec;
        else return false;
      },
      s);
}

bool distributed(const StrategyChoice& s) {
  return std::visit(
      [](const auto& o) {
        if constexpr (requires { std::decay_t<decltype(o)>::distributed; }) return std::decay_t<decltype(o)>::distributed;
        else return false;
      },
      s);
}

bool stops_on_time(const StrategyChoice& s) {
  return std::visit(
      [](const auto& o) {
        if constexpr (requires { std::decay_t<decltype(o)>::stops_on_time; })
          return std::decay_t<decltype(o)>::stops_on_time;
        else return false;
      },
      s);
}

bool checkpoints(const StrategyChoice& s) {
  return std::visit(
      [](const auto& o) {
        if constexpr (requires { std::decay_t<decltype(o)>::checkpoints; })
          return std::decay_t<decltype(o)>::checkpoints;
        else return false;
      },
      s);
}

bool runs_local_workers(const StrategyChoice& s) {
  return std::visit(
      [](const auto& o) {
        if constexpr (requires { std::decay_t<decltype(o)>::local_workers; })
          return std::decay_t<decltype(o)>::local_workers;
        else return false;
      },
      s);
}

std::string strategies_with_checkpoints() {
  std::vector<std::string> names;
  for (const auto name : StrategyRegistry::names())
    if (checkpoints(*StrategyRegistry::make(name))) names.emplace_back(name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

int servers_of(const StrategyChoice& s) {
  return std::visit(
      [](const auto& o) {
        if constexpr (requires { o.servers; }) return o.servers;
        else return 0;
      },
      s);
}

void check_strategy(const StrategyChoice& s, int workers, const std::string& prefix, Problems& problems) {
  std::visit(
      [&](const auto& o) {
        if constexpr (requires { o.check(workers, prefix, problems); }) o.check(workers, prefix, problems);
      },
      s);
}

StrategyFactory strategy_factory_of(const StrategyChoice& s) {
  return std::visit(
      [](const auto& o) -> StrategyFactory {
        if constexpr (requires { o.make_group(StrategyConfig{}, size_t{}, int{}); }) return strategy_factory(o);
        else return {};
      },
      s);
}

std::optional<ShmConfig> shared_memory_config(const StrategyChoice& s) {
  return std::visit(
      [](const auto& o) -> std::optional<ShmConfig> {
        if constexpr (requires { o.shm_config(); }) return o.shm_config();
        else return std::nullopt;
      },
      s);
}

}  // namespace ptrain
