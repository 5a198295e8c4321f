#pragma once
// What an asynchronous parameter server does with a stale gradient (seed 002):
// apply it as it is, drop it when it is staler than T updates, or scale its
// step by 1 / (1 + staleness).
#include <cstdint>
#include <string>

#include "ps/shard_server.hpp"

namespace ptrain {

struct StalePolicy {
  enum class Kind { None, Drop, Scale };
  Kind kind = Kind::None;
  uint64_t drop_above = 0;  // Drop: the largest staleness still applied
};

// "none", "drop:T" (T >= 0, an integer) or "scale"; throws ptrain::Error naming
// --stale-policy and the value otherwise.
StalePolicy parse_stale_policy(const std::string& text);
std::string to_string(const StalePolicy& policy);

// The rule a shard applies: the step's scale for a staleness, 0 to drop it.
StalenessRule staleness_rule(const StalePolicy& policy);

}  // namespace ptrain
