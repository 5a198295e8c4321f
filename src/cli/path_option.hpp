#pragma once
// Options that name files or take text: an empty text is refused
// ("--report: an empty path"), not taken as "none" (--report "$OUT" with OUT
// unset wrote no report, and said nothing).
#include <CLI/CLI.hpp>
#include <string>

namespace ptrain {

// `what`: "path", "value".
inline CLI::Validator non_empty(const std::string& what) {
  return CLI::Validator([what](std::string& text) { return text.empty() ? "an empty " + what : std::string(); }, "",
                        "non-empty " + what);
}
inline CLI::Validator non_empty_path() { return non_empty("path"); }

}  // namespace ptrain
