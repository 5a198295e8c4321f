#include "plan/strategy_registry.hpp"

namespace ptrain {

// A trait a strategy's options declare as a static bool member; false where
// they do not declare it.
#define PTRAIN_STRATEGY_TRAIT(function, member)                                      \
  bool function(const StrategyChoice& s) {                                           \
    return std::visit(                                                               \
        [](const auto& o) {                                                          \
          if constexpr (requires { std::decay_t<decltype(o)>::member; })             \
            return static_cast<bool>(std::decay_t<decltype(o)>::member);             \
          else                                                                       \
            return false;                                                            \
        },                                                                           \
        s);                                                                          \
  }

PTRAIN_STRATEGY_TRAIT(takes_codec, takes_codec)
PTRAIN_STRATEGY_TRAIT(distributed, distributed)
PTRAIN_STRATEGY_TRAIT(stops_on_time, stops_on_time)
PTRAIN_STRATEGY_TRAIT(checkpoints, checkpoints)
PTRAIN_STRATEGY_TRAIT(runs_local_workers, local_workers)
PTRAIN_STRATEGY_TRAIT(mpi_by_default, mpi_by_default)

#undef PTRAIN_STRATEGY_TRAIT

namespace {
std::string strategies_with(bool (*trait)(const StrategyChoice&)) {
  std::vector<std::string> names;
  for (const auto name : StrategyRegistry::names())
    if (trait(*StrategyRegistry::make(name))) names.emplace_back(name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}
}  // namespace

std::string strategies_with_checkpoints() { return strategies_with(checkpoints); }
std::string strategies_with_servers() { return strategies_with(has_servers); }

bool has_servers(const StrategyChoice& s) { return servers_of(s) > 0; }

int servers_of(const StrategyChoice& s) {
  return std::visit(
      [](const auto& o) {
        if constexpr (requires { o.servers; }) return o.servers;
        else return 0;
      },
      s);
}

int pipeline_stages_of(const StrategyChoice& s, int workers) {
  return std::visit(
      [workers](const auto& o) {
        if constexpr (requires { o.stages_of(workers); }) return o.stages_of(workers);
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
