#include "cli/byte_size.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ptrain {

std::optional<size_t> parse_byte_size(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string unit = text.substr(used);
  double scale = 0;
  if (unit == "" || unit == "B") scale = 1;
  if (unit == "KiB" || unit == "K") scale = 1024.0;
  if (unit == "MiB" || unit == "M") scale = 1024.0 * 1024;
  if (unit == "GiB" || unit == "G") scale = 1024.0 * 1024 * 1024;
  if (scale == 0 || !(value > 0) || value * scale > 1e15) return std::nullopt;
  const auto bytes = static_cast<size_t>(value * scale);
  if (bytes == 0) return std::nullopt;
  return bytes;
}

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

std::string human_bytes(size_t bytes) {
  if (bytes >= (1u << 30) && bytes % (1u << 30) == 0) return fmt::format("{}GiB", bytes >> 30);
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{}MiB", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return fmt::format("{}KiB", bytes >> 10);
  return fmt::format("{}B", bytes);
}

}  // namespace ptrain
