#include "core/fields.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace ptrain {

bool Range::contains(double v) const {
  if (std::isnan(v)) return false;
  if (std::isinf(v)) return false;  // no field is a quantity that can be infinite (an lr of inf ran a sweep of crashes)
  if (lo_open ? !(v > lo) : !(v >= lo)) return false;
  if (hi_open ? !(v < hi) : !(v <= hi)) return false;
  return true;
}

namespace {
std::string number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}
}  // namespace

std::string Range::requirement() const {
  const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  if (has_lo && has_hi)
    return "must be in " + std::string(lo_open ? "(" : "[") + number(lo) + ", " + number(hi) + (hi_open ? ")" : "]");
  if (has_lo) return lo_open ? "must be > " + number(lo) : (lo == 1 ? "must be at least 1" : "must be >= " + number(lo));
  if (has_hi) return hi_open ? "must be < " + number(hi) : "must be <= " + number(hi);
  return "must be a number";
}

std::optional<size_t> parse_byte_size(const std::string& text) {
  if (text.empty() || text.front() == '-' || text.front() == '+' || std::isspace(static_cast<unsigned char>(text.front())))
    return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno == ERANGE) return std::nullopt;
  const std::string unit(end);
  double scale = 0;
  if (unit == "" || unit == "B") scale = 1;
  if (unit == "KiB" || unit == "K") scale = 1024.0;
  if (unit == "MiB" || unit == "M") scale = 1024.0 * 1024;
  if (unit == "GiB" || unit == "G") scale = 1024.0 * 1024 * 1024;
  if (scale == 0 || !(value > 0) || !(value * scale <= 1e15)) return std::nullopt;
  const auto bytes = static_cast<size_t>(value * scale);
  if (bytes == 0) return std::nullopt;
  return bytes;
}

std::string human_bytes(size_t bytes) {
  if (bytes >= (1u << 30) && bytes % (1u << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + "KiB";
  return std::to_string(bytes) + "B";
}

std::optional<Cadence> parse_cadence(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (text.back() == 's') {
    double seconds = 0;
    if (detail::parse_real(text.substr(0, text.size() - 1), seconds) || !std::isfinite(seconds) || seconds < 0 ||
        seconds > 1e9)
      return std::nullopt;
    return Cadence{0, seconds};
  }
  unsigned long long steps = 0;
  if (detail::parse_unsigned(text, std::numeric_limits<size_t>::max(), steps)) return std::nullopt;
  return Cadence{static_cast<size_t>(steps), 0};
}

std::string cadence_text(const Cadence& cadence) {
  return cadence.seconds > 0 ? field_text(cadence.seconds) + "s" : std::to_string(cadence.steps);
}

namespace detail {

std::optional<std::string> parse_signed(const std::string& text, long long lo, long long hi, long long& out) {
  long long v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  auto [end, ec] = std::from_chars(first, last, v);
  if (text.empty() || ec == std::errc::invalid_argument || end != last)
    return "expected an integer, got '" + text + "'";
  if (ec == std::errc::result_out_of_range || v < lo || v > hi)
    return "'" + text + "' is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  out = v;
  return std::nullopt;
}

std::optional<std::string> parse_unsigned(const std::string& text, unsigned long long hi, unsigned long long& out) {
  if (!text.empty() && text.front() == '-') return "must not be negative, got '" + text + "'";
  unsigned long long v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  auto [end, ec] = std::from_chars(first, last, v);
  if (text.empty() || ec == std::errc::invalid_argument || end != last)
    return "expected a non-negative integer, got '" + text + "'";
  if (ec == std::errc::result_out_of_range || v > hi)
    return "'" + text + "' is out of range (at most " + std::to_string(hi) + ")";
  out = v;
  return std::nullopt;
}

std::optional<std::string> parse_real(const std::string& text, double& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front())))
    return "expected a number, got '" + text + "'";
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return "expected a number, got '" + text + "'";
  if (errno == ERANGE && std::isinf(v)) return "'" + text + "' is out of range";
  out = v;
  return std::nullopt;
}

std::optional<std::string> parse_bool(const std::string& text, bool& out) {
  if (text == "true" || text == "1" || text == "on" || text == "yes") return out = true, std::nullopt;
  if (text == "false" || text == "0" || text == "off" || text == "no") return out = false, std::nullopt;
  return "expected true or false, got '" + text + "'";
}

}  // namespace detail
}  // namespace ptrain
