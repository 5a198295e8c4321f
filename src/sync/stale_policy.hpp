#pragma once
// What an asynchronous parameter server does with a stale gradient (seed 002):
// apply it as it is, drop it when it is staler than T updates, scale its
// step by 1 / (1 + staleness), or give the worker that computed it a larger
// next mini-batch, so that its next gradient averages more samples.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ps/shard_server.hpp"

namespace ptrain {

struct StalePolicy {
  enum class Kind { None, Drop, Scale, Batch };
  Kind kind = Kind::None;
  uint64_t drop_above = 0;  // Drop: the largest staleness still applied
  uint64_t batch_max = 1;   // Batch: the most base batches one step takes (K)
};

// "none", "drop:T" (T >= 0), "scale" or "batch:K" (K >= 1), T and K whole
// numbers; throws ptrain::Error naming strategy.stale_policy and the value otherwise.
inline constexpr std::string_view kStalePolicyExpected =
    "expected none, drop:T (T a whole number of updates), scale or batch:K (K a whole number of batches, at least 1)";
StalePolicy parse_stale_policy(const std::string& text);
std::string to_string(const StalePolicy& policy);

// The rule a shard applies: the step's scale for a staleness, 0 to drop it.
StalenessRule staleness_rule(const StalePolicy& policy);

// Batch: the base batches a worker's next step takes when its last gradient
// was `staleness` updates stale among `workers`: one more for every full round
// of the W workers' updates it missed (under async every gradient misses
// about W - 1), at most K. 1 under the other kinds.
size_t step_batches(const StalePolicy& policy, uint64_t staleness, int workers);

}  // namespace ptrain
