#pragma once
// --hidden: the MLP's hidden widths, as "256,128".
#include <cstdint>
#include <string>
#include <vector>

namespace ptrain {

// Throws ptrain::Error naming --hidden and the text when a width is not a positive integer.
std::vector<int64_t> parse_widths(const std::string& text);

}  // namespace ptrain
