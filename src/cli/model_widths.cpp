#include "cli/model_widths.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace ptrain {

std::vector<int64_t> parse_widths(const std::string& text) {
  std::vector<int64_t> widths;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || value <= 0)
      throw Error("--hidden '" + text + "': expected positive widths separated by commas, e.g. 256,128");
    widths.push_back(value);
    start = comma + 1;
  }
  return widths;
}

}  // namespace ptrain
