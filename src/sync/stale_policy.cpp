#include "sync/stale_policy.hpp"

#include <charconv>

#include "core/error.hpp"
#include "core/printable.hpp"

namespace ptrain {

StalePolicy parse_stale_policy(const std::string& text) {
  if (text == "none") return {};
  if (text == "scale") return {StalePolicy::Kind::Scale, 0};
  if (text.starts_with("drop:")) {
    const std::string number = text.substr(5);
    uint64_t t = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), t);
    if (!number.empty() && ec == std::errc() && end == number.data() + number.size())
      return {StalePolicy::Kind::Drop, t};
  }
  throw Error("strategy.stale_policy '" + printable(text, 40) +
              "': expected none, drop:T (T a whole number of updates) or scale");
}

std::string to_string(const StalePolicy& policy) {
  switch (policy.kind) {
    case StalePolicy::Kind::None:
      return "none";
    case StalePolicy::Kind::Drop:
      return "drop:" + std::to_string(policy.drop_above);
    case StalePolicy::Kind::Scale:
      return "scale";
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
  }
  return {};
}

}  // namespace ptrain
