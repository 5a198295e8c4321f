#pragma once
// Sizes on the command line: "4KiB", "25MiB", "1GiB", "4096" (bytes).
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/fields.hpp"  // parse_byte_size, human_bytes

namespace ptrain {

// "lo:hi" as lo, 4 lo, 16 lo, ... up to hi (hi always included); "n" as {n}.
// `parse_one` reads one end (and throws for a bad one); `option` names the
// flag in the error for a range that runs backwards.
std::vector<size_t> parse_x4_range(const std::string& text,
                                   const std::function<size_t(const std::string&)>& parse_one,
                                   const std::string& option);

}  // namespace ptrain
