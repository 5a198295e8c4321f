#include "sync/stale_policy.hpp"

#include <charconv>
#include <optional>
#include <string_view>

#include "core/error.hpp"
#include "core/printable.hpp"

namespace ptrain {

namespace {

// The whole number after `prefix`, if `text` is exactly that.
std::optional<uint64_t> number_after(const std::string& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return std::nullopt;
  const std::string_view number = std::string_view(text).substr(prefix.size());
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
  return n;
}

}  // namespace

StalePolicy parse_stale_policy(const std::string& text) {
  if (text == "none") return {};
  if (text == "scale") return {.kind = StalePolicy::Kind::Scale};
  if (const auto t = number_after(text, "drop:")) return {.kind = StalePolicy::Kind::Drop, .drop_above = *t};
  if (const auto k = number_after(text, "batch:"); k && *k >= 1)
    return {.kind = StalePolicy::Kind::Batch, .batch_max = *k};
  throw Error("strategy.stale_policy '" + printable(text, 40) + "': " + std::string(kStalePolicyExpected));
}

std::string to_string(const StalePolicy& policy) {
  switch (policy.kind) {
    case StalePolicy::Kind::None:
      return "none";
    case StalePolicy::Kind::Drop:
      return "drop:" + std::to_string(policy.drop_above);
    case StalePolicy::Kind::Scale:
      return "scale";
    case StalePolicy::Kind::Batch:
      return "batch:" + std::to_string(policy.batch_max);
  }
  return "none";
}

StalenessRule staleness_rule(const StalePolicy& policy) {
  switch (policy.kind) {
    case StalePolicy::Kind::None:
      return {};
    case StalePolicy::Kind::Drop:
      return [t = policy.drop_above](uint64_t s) { return s > t ? 0.0 : 1.0; };
    case StalePolicy::Kind::Scale:
      return [](uint64_t s) { return 1.0 / (1.0 + static_cast<double>(s)); };
    case StalePolicy::Kind::Batch:
      return {};  // the gradient is applied as it is; the worker's next batch grows
  }
  return {};
}

size_t step_batches(const StalePolicy& policy, uint64_t staleness, int workers) {
  if (policy.kind != StalePolicy::Kind::Batch || workers < 1) return 1;
  const uint64_t rounds = staleness / static_cast<uint64_t>(workers);
  return static_cast<size_t>(rounds >= policy.batch_max ? policy.batch_max : 1 + rounds);
}

}  // namespace ptrain
