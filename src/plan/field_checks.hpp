#pragma once
// The range checks of an options struct's fields (core/fields.hpp), reported
// as problems named "<prefix><field>".
#include <cmath>
#include <string>

#include "core/fields.hpp"
#include "core/problems.hpp"

namespace ptrain {

template <class Options>
void check_field_ranges(const Options& options, const std::string& prefix, Problems& problems) {
  Options::fields(options, [&](const char* name, const auto& value, const char*, const Range& range) {
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
      if (value.empty() && !range.empty_list) problems.add(prefix + name, "needs at least one value");
      for (int64_t v : value)
        if (v < 1) problems.add(prefix + name, "values must be positive (got " + std::to_string(v) + ")");
    } else if (const auto number = field_number(value); number && !range.contains(*number)) {
      // An infinity beyond an open end: the range's own words ("must be > 0") would not say what is wrong.
      const bool infinite_past_open_end = std::isinf(*number) && !std::isfinite(*number > 0 ? range.hi : range.lo);
      problems.add(prefix + name,
                   (infinite_past_open_end ? std::string("must be finite") : range.requirement()) + " (got " +
                       field_text(value) + ")");
    }
  });
}

}  // namespace ptrain
