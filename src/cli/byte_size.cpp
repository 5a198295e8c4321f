#include "cli/byte_size.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ptrain {

std::vector<size_t> parse_x4_range(const std::string& text,
                                   const std::function<size_t(const std::string&)>& parse_one,
                                   const std::string& option) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return {parse_one(text)};
  const size_t lo = parse_one(text.substr(0, colon)), hi = parse_one(text.substr(colon + 1));
  if (lo > hi) throw Error(option + " '" + text + "': the range runs backwards");
  std::vector<size_t> sizes;
  for (size_t s = lo; s <= hi; s *= 4) sizes.push_back(s);
  if (sizes.back() != hi) sizes.push_back(hi);
  return sizes;
}

}  // namespace ptrain
