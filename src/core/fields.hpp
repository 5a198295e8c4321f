#pragma once
// The fields of an options struct (a codec's, a strategy's, a model's...),
// described once, so that the plan file, the checks, the command line and
// --help all come from one list. An options struct declares
//
//   static constexpr std::string_view name = "dgc";         // its registered name
//   static constexpr std::string_view summary = "...";      // one line for --help
//   template <class Self, class Visit>
//   static void fields(Self& self, Visit&& visit) {         // Self: the struct, const or not
//     visit("density", self.density, "fraction of the elements sent", Range::fraction());
//   }
//
// and the visitors (plan/plan_json.cpp, plan/plan_checks.cpp, cli/) do the rest.
// A field is a bool, an integer, a float or double, a std::string, a
// std::vector<int64_t>, a ByteSize, a Cadence or an enum with an EnumText specialisation.
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ptrain {

// The values a numeric field may take. The default allows everything.
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;
  bool empty_list = false;  // a list field (INT,INT,...) may have no values

  static Range positive() { return {0, std::numeric_limits<double>::infinity(), true, false}; }
  static Range non_negative() { return {0, std::numeric_limits<double>::infinity(), false, false}; }
  static Range at_least(double v) { return {v, std::numeric_limits<double>::infinity(), false, false}; }
  static Range unit_interval() { return {0, 1, false, true}; }  // [0, 1)
  static Range fraction() { return {0, 1, true, false}; }       // (0, 1]
  static Range between(double a, double b) { return {a, b, false, false}; }
  static Range any_count() {
    Range r;
    r.empty_list = true;
    return r;
  }

  bool limits() const { return std::isfinite(lo) || std::isfinite(hi); }
  // NaN and the infinities are never inside.
  bool contains(double v) const;
  // "must be > 0", "must be in (0, 1]", "must be at least 1".
  std::string requirement() const;
};

// A size in bytes, written "25MiB", "512KiB" or "4096".
struct ByteSize {
  size_t bytes = 0;
  bool operator==(const ByteSize&) const = default;
};

// How often something recurring happens: every `steps` steps ("100") or
// every `seconds` seconds ("30s", "1.5s"); "0" is neither (the field says
// what that means).
struct Cadence {
  size_t steps = 0;
  double seconds = 0;
  bool operator==(const Cadence&) const = default;
  bool off() const { return steps == 0 && seconds == 0; }
};

// The names of an enum's values, indexed by the value: specialise with
//   static constexpr std::array<std::string_view, N> names = {...};
template <class E>
struct EnumText;

template <class T>
concept NamedEnum = std::is_enum_v<T> && requires { EnumText<T>::names; };

template <NamedEnum E>
std::string_view enum_name(E value) {
  const auto i = static_cast<size_t>(value);
  return i < EnumText<E>::names.size() ? EnumText<E>::names[i] : std::string_view("?");
}

template <NamedEnum E>
std::string enum_choices() {
  std::string out;
  for (auto n : EnumText<E>::names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// The size in bytes, or nothing when `text` is not a positive size with a known unit (fields take "0" too).
std::optional<size_t> parse_byte_size(const std::string& text);
// The shortest exact form: 4KiB, 25MiB, 1000B.
std::string human_bytes(size_t bytes);
// "100" or "30s"; nothing when `text` is neither (or is negative, NaN, infinite or overflows).
std::optional<Cadence> parse_cadence(const std::string& text);
std::string cadence_text(const Cadence& cadence);

// A field's value as text: for defaults in --help and for messages.
template <class T>
std::string field_text(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (NamedEnum<T>) {
    return std::string(enum_name(v));
  } else if constexpr (std::is_same_v<T, ByteSize>) {
    return human_bytes(v.bytes);
  } else if constexpr (std::is_same_v<T, Cadence>) {
    return cadence_text(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v;
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    std::string out;
    for (int64_t x : v) {
      if (!out.empty()) out.push_back(',');
      out.append(std::to_string(x));
    }
    return out;
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
    return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
  } else {
    static_assert(std::is_integral_v<T>, "unsupported field type");
    return std::to_string(v);
  }
}

// What a field takes, for --help: "INT", "NUMBER", "SIZE", "a|b|c"...
template <class T>
std::string field_kind() {
  if constexpr (std::is_same_v<T, bool>) return "BOOL";
  else if constexpr (NamedEnum<T>) {
    std::string out;
    for (auto n : EnumText<T>::names) out += (out.empty() ? "" : "|") + std::string(n);
    return out;
  } else if constexpr (std::is_same_v<T, ByteSize>) return "SIZE";
  else if constexpr (std::is_same_v<T, Cadence>) return "N|Ns";
  else if constexpr (std::is_same_v<T, std::string>) return "TEXT";
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return "INT,INT,...";
  else if constexpr (std::is_floating_point_v<T>) return "NUMBER";
  else return "INT";
}

namespace detail {
std::optional<std::string> parse_signed(const std::string& text, long long lo, long long hi, long long& out);
std::optional<std::string> parse_unsigned(const std::string& text, unsigned long long hi, unsigned long long& out);
std::optional<std::string> parse_real(const std::string& text, double& out);
std::optional<std::string> parse_bool(const std::string& text, bool& out);
}  // namespace detail

// Parses `text` into `v`; on failure returns what is wrong ("expected an
// integer, got 'x'") and leaves `v` as it was. Negative text for an unsigned
// field is an error, not a wrap-around.
template <class T>
std::optional<std::string> field_from_text(T& v, const std::string& text) {
  if constexpr (std::is_same_v<T, bool>) {
    return detail::parse_bool(text, v);
  } else if constexpr (NamedEnum<T>) {
    const auto& names = EnumText<T>::names;
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == text) {
        v = static_cast<T>(i);
        return std::nullopt;
      }
    return "expected one of " + enum_choices<T>() + ", got '" + text + "'";
  } else if constexpr (std::is_same_v<T, ByteSize>) {
    // Zero is a size too: a field's range says whether it may be (0: none, off).
    const auto bytes = text == "0" || text == "0B" ? std::optional<size_t>(0) : parse_byte_size(text);
    if (!bytes) return "expected a size such as 25MiB, 512KiB or 4096, got '" + text + "'";
    v.bytes = *bytes;
    return std::nullopt;
  } else if constexpr (std::is_same_v<T, Cadence>) {
    const auto cadence = parse_cadence(text);
    if (!cadence) return "expected a number of steps (100) or of seconds (30s), got '" + text + "'";
    v = *cadence;
    return std::nullopt;
  } else if constexpr (std::is_same_v<T, std::string>) {
    v = text;
    return std::nullopt;
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    std::vector<int64_t> out;
    size_t start = 0;
    while (true) {
      const size_t comma = text.find(',', start);
      long long x = 0;
      const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (auto why = detail::parse_signed(part, 1, std::numeric_limits<int32_t>::max(), x))
        return "expected positive integers separated by commas, got '" + text + "'";
      out.push_back(x);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    v = std::move(out);
    return std::nullopt;
  } else if constexpr (std::is_floating_point_v<T>) {
    double x = 0;
    if (auto why = detail::parse_real(text, x)) return why;
    if (std::isfinite(x) && std::fabs(x) > static_cast<double>(std::numeric_limits<T>::max()))
      return "'" + text + "' is out of range";
    v = static_cast<T>(x);
    return std::nullopt;
  } else if constexpr (std::is_signed_v<T>) {
    long long x = 0;
    if (auto why = detail::parse_signed(text, std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), x))
      return why;
    v = static_cast<T>(x);
    return std::nullopt;
  } else {
    unsigned long long x = 0;
    if (auto why = detail::parse_unsigned(text, std::numeric_limits<T>::max(), x)) return why;
    v = static_cast<T>(x);
    return std::nullopt;
  }
}

// The value of a numeric field as a double, for Range checks (nullopt: not numeric).
template <class T>
std::optional<double> field_number(const T& v) {
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) return static_cast<double>(v);
  else if constexpr (std::is_same_v<T, ByteSize>) return static_cast<double>(v.bytes);
  else return std::nullopt;
}

}  // namespace ptrain
