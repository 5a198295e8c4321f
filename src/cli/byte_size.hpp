#pragma once
// Sizes on the command line: "4KiB", "25MiB", "1GiB", "4096" (bytes).
#include <cstddef>
#include <optional>
#include <string>

namespace ptrain {

// The size in bytes, or nothing when `text` is not a positive size with a known unit.
std::optional<size_t> parse_byte_size(const std::string& text);

// The shortest exact form: 4KiB, 25MiB, 1000B.
std::string human_bytes(size_t bytes);

}  // namespace ptrain
