#pragma once
// Text from an input in error messages, which are one line each.
#include <cstddef>
#include <string>
#include <string_view>

namespace ptrain {

// Bytes from an input (a file's header, a record name) made safe to quote:
// control and non-ASCII bytes escaped as \xNN, a backslash doubled, and text
// longer than `limit` cut, ending in "...".
std::string printable(std::string_view text, size_t limit = 100);

// A message kept on one line: control characters (a newline in a name a plan
// file gave) escaped as \xNN, everything else as it is.
std::string on_one_line(std::string_view text);

}  // namespace ptrain
