#include "data/npy_file.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/printable.hpp"

namespace ptrain {
namespace {

constexpr std::array<uint8_t, 6> kMagic = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// NumPy itself refuses headers over 10 kB by default; 1 MiB leaves room for
// odd writers while still refusing a corrupt length before allocating.
constexpr uint32_t kMaxHeaderBytes = uint32_t{1} << 20;
// NumPy 2's limit on dimensions; far above any real data set.
constexpr size_t kMaxRank = 64;

struct TypeInfo {
  NpyType type;
  const char* code;  // the dtype without its byte-order character
  size_t size;
};

constexpr TypeInfo kTypes[] = {
    {NpyType::Bool, "b1", 1},    {NpyType::UInt8, "u1", 1},   {NpyType::Int8, "i1", 1},
    {NpyType::UInt16, "u2", 2},  {NpyType::Int16, "i2", 2},   {NpyType::UInt32, "u4", 4},
    {NpyType::Int32, "i4", 4},   {NpyType::UInt64, "u8", 8},  {NpyType::Int64, "i8", 8},
    {NpyType::Float32, "f4", 4}, {NpyType::Float64, "f8", 8},
};

const TypeInfo& info_of(NpyType type) {
  for (const TypeInfo& info : kTypes)
    if (info.type == type) return info;
  throw Error("unknown NpyType " + std::to_string(static_cast<int>(type)));
}

// A shape as Python prints a tuple: (), (5,), (5, 3).
std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

// The shortest text that reads back as the same value.
template <typename T>
std::string number_text(T value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

// The value of a little-endian element, whatever the host's byte order.
template <typename T>
T load_le(const std::byte* p) {
  using Bits = std::conditional_t<
      sizeof(T) == 1, uint8_t,
      std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  Bits bits = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    bits = static_cast<Bits>(bits | Bits{std::to_integer<uint8_t>(p[i])} << (8 * i));
  return std::bit_cast<T>(bits);
}

struct HeaderFields {
  std::string descr;
  bool fortran_order = false;
  std::vector<uint64_t> shape;
};

// Parses the header dict, e.g. {'descr': '<f4', 'fortran_order': False,
// 'shape': (5, 3), } in any key order: the subset of Python literal syntax
// that NumPy (and other writers) produce, each key exactly once.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  HeaderFields parse() {
    HeaderFields fields;
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_space();
    expect('{', "the header should be a dict, starting with '{'");
    skip_space();
    if (!consume('}')) {
      while (true) {
        const size_t key_pos = pos_;
        const std::string key = parse_string("a quoted key");
        skip_space();
        expect(':', "expected ':' after the key");
        skip_space();
        bool* seen = nullptr;
        if (key == "descr") {
          seen = &have_descr;
          if (peek() == '[')
            throw Error(path_ +
                        ": structured dtype (a list of fields) is not supported: save a plain numeric array");
          fields.descr = parse_string("a quoted dtype such as '<f4'");
        } else if (key == "fortran_order") {
          seen = &have_fortran;
          fields.fortran_order = parse_bool();
        } else if (key == "shape") {
          seen = &have_shape;
          fields.shape = parse_shape();
        } else {
          pos_ = key_pos;
          fail("unexpected key '" + printable(key, 40) + "' (expected 'descr', 'fortran_order' and 'shape')");
        }
        if (*seen) {
          pos_ = key_pos;
          fail("key '" + key + "' appears twice");
        }
        *seen = true;
        skip_space();
        if (consume('}')) break;
        expect(',', "expected ',' or '}' after a value");
        skip_space();
        if (consume('}')) break;
      }
    }
    skip_space();  // the padding: spaces and a final newline
    if (pos_ != text_.size()) fail("unexpected text after the dict");
    if (!have_descr) fail("missing key 'descr'");
    if (!have_fortran) fail("missing key 'fortran_order'");
    if (!have_shape) fail("missing key 'shape'");
    return fields;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    std::string_view shown = text_;
    while (!shown.empty() && (shown.back() == ' ' || shown.back() == '\n')) shown.remove_suffix(1);
    throw Error(path_ + ": malformed .npy header: " + what + " at character " + std::to_string(pos_) +
                " of \"" + printable(shown) + "\"");
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool consume(char c) {
    if (peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }

  void expect(char c, const std::string& what) {
    if (!consume(c)) fail(what);
  }

  // A quoted string without escapes: NumPy's keys and dtypes never need them.
  std::string parse_string(const std::string& what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected " + what);
    const size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\n') fail("unterminated string");
      if (text_[pos_] == '\\') fail("backslash escapes are not supported in a string");
      ++pos_;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    return std::string(text_.substr(start, pos_++ - start));
  }

  bool parse_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    const size_t end = pos_ + word.size();
    if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
      return false;
    pos_ = end;
    return true;
  }

  bool parse_bool() {
    if (parse_word("True")) return true;
    if (parse_word("False")) return false;
    fail("expected True or False for 'fortran_order'");
  }

  std::vector<uint64_t> parse_shape() {
    expect('(', "expected a tuple such as (5, 3) for 'shape'");
    std::vector<uint64_t> shape;
    skip_space();
    if (consume(')')) return shape;
    while (true) {
      if (shape.size() == kMaxRank) fail("shape has more than " + std::to_string(kMaxRank) + " dimensions");
      shape.push_back(parse_dimension());
      skip_space();
      if (consume(')')) {
        // (5) is the number 5 in Python, not a tuple.
        if (shape.size() == 1) fail("a one-dimensional shape needs a comma, as in (5,)");
        return shape;
      }
      expect(',', "expected ',' or ')' in the shape");
      skip_space();
      if (consume(')')) return shape;
    }
  }

  uint64_t parse_dimension() {
    if (peek() == '-') fail("negative dimension in the shape");
    if (!std::isdigit(static_cast<unsigned char>(peek())))
      fail("expected a dimension (a non-negative integer)");
    uint64_t value = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      const uint64_t digit = static_cast<uint64_t>(peek() - '0');
      if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) fail("dimension too large");
      value = value * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2's long literal, from old writers
    return value;
  }

  const std::string& path_;
  std::string_view text_;
  size_t pos_ = 0;
};

NpyType parse_descr(const std::string& path, const std::string& descr) {
  const std::string shown = std::string(1, '\'') + printable(descr, 40) + '\'';
  char order = '=';  // no byte-order character means native, as in NumPy
  std::string_view code = descr;
  if (!code.empty() && (code[0] == '<' || code[0] == '>' || code[0] == '|' || code[0] == '=')) {
    order = code[0];
    code.remove_prefix(1);
  }
  for (const TypeInfo& info : kTypes) {
    if (code != info.code) continue;
    const bool native_little = std::endian::native == std::endian::little;
    const bool little = order == '<' || ((order == '=' || order == '|') && native_little);
    if (info.size > 1 && !little)
      throw Error(path + ": big-endian dtype " + shown +
                  " is not supported: save a little-endian array, e.g. " + "np.save(path, a.astype('<" +
                  info.code + "'))");
    return info.type;
  }
  if (!code.empty() && code[0] == 'O')
    throw Error(path + ": object dtype " + shown + " is not supported (it holds pickled Python objects): " +
                "save a numeric array, e.g. np.save(path, np.asarray(a, dtype=np.float32))");
  throw Error(path + ": unsupported dtype " + shown +
              " (supported: bool, int8/16/32/64, uint8/16/32/64, float32 and float64, little-endian)");
}

void check_data_size(const NpyArray& array) {
  const size_t expected = array.count() * npy_type_size(array.type);
  if (array.data.size() != expected)
    throw Error("NpyArray of shape " + shape_text(array.shape) + " holds " +
                std::to_string(array.data.size()) + " data bytes, expected " + std::to_string(expected));
}

// Calls f(index, value) for every element, with value of the element's C++ type.
template <typename F>
void for_each_value(const NpyArray& array, F&& f) {
  check_data_size(array);
  const std::byte* p = array.data.data();
  const size_t n = array.count();
  auto each = [&]<typename T>(T) {
    for (size_t i = 0; i < n; ++i) f(i, load_le<T>(p + i * sizeof(T)));
  };
  switch (array.type) {
    case NpyType::Bool:
      return each(uint8_t{});  // any non-zero byte is true
    case NpyType::UInt8:
      return each(uint8_t{});
    case NpyType::Int8:
      return each(int8_t{});
    case NpyType::UInt16:
      return each(uint16_t{});
    case NpyType::Int16:
      return each(int16_t{});
    case NpyType::UInt32:
      return each(uint32_t{});
    case NpyType::Int32:
      return each(int32_t{});
    case NpyType::UInt64:
      return each(uint64_t{});
    case NpyType::Int64:
      return each(int64_t{});
    case NpyType::Float32:
      return each(float{});
    case NpyType::Float64:
      return each(double{});
  }
}

}  // namespace

size_t npy_type_size(NpyType type) { return info_of(type).size; }

std::string npy_type_name(NpyType type) {
  const TypeInfo& info = info_of(type);
  return std::string(1, info.size == 1 ? '|' : '<') + info.code;
}

size_t NpyArray::count() const {
  size_t n = 1;
  for (uint64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

NpyArray read_npy(const std::string& path) {
  InputFile file(path, "a .npy file");
  const uint64_t file_bytes = file.size();

  // The preamble: magic, version, header length (2 bytes in 1.0, 4 later).
  std::array<uint8_t, 12> preamble{};
  const size_t got =
      file.read(preamble.data(), std::min<uint64_t>(preamble.size(), file_bytes));
  if (std::memcmp(preamble.data(), kMagic.data(), std::min(got, kMagic.size())) != 0) {
    std::string start;
    for (size_t i = 0; i < std::min<size_t>(got, 6); ++i) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%02x", preamble[i]);
      if (i > 0) start += ' ';
      start += hex;
    }
    const bool zip = got >= 2 && preamble[0] == 'P' && preamble[1] == 'K';
    throw Error(path + ": not a .npy file: it starts with bytes " + start + ", not the magic \\x93NUMPY" +
                (zip ? " (a .npz archive? save each array with np.save)" : ""));
  }
  if (got < 8)
    throw Error(path + ": truncated: a .npy file starts with at least 10 bytes of preamble, found " +
                std::to_string(got));
  const int major = preamble[6], minor = preamble[7];
  if (major < 1 || major > 3 || minor != 0)
    throw Error(path + ": unsupported .npy format version " + std::to_string(major) + "." +
                std::to_string(minor) + " (known: 1.0, 2.0 and 3.0)");
  const size_t preamble_bytes = major == 1 ? 10 : 12;
  if (got < preamble_bytes)
    throw Error(path + ": truncated: the version " + std::to_string(major) + ".0 preamble needs " +
                std::to_string(preamble_bytes) + " bytes, found " + std::to_string(got));
  const uint32_t header_bytes = major == 1
                                    ? load_le<uint16_t>(reinterpret_cast<const std::byte*>(&preamble[8]))
                                    : load_le<uint32_t>(reinterpret_cast<const std::byte*>(&preamble[8]));
  if (header_bytes > kMaxHeaderBytes)
    throw Error(path + ": .npy header length " + std::to_string(header_bytes) + " exceeds the limit of " +
                std::to_string(kMaxHeaderBytes) + " bytes (a corrupt file?)");
  if (header_bytes > file_bytes - preamble_bytes)
    throw Error(path + ": truncated: the .npy header needs " + std::to_string(header_bytes) +
                " bytes, found " + std::to_string(file_bytes - preamble_bytes));

  // The preamble read may have run past a version 1.0 one: go back.
  file.seek(preamble_bytes);
  std::string header(header_bytes, '\0');
  if (file.read(header.data(), header.size()) != header.size())
    throw Error(path +
                ": truncated: the file ended inside the .npy header (did it shrink while being read?)");

  const HeaderFields fields = HeaderParser(path, header).parse();
  NpyArray array;
  array.type = parse_descr(path, fields.descr);
  array.shape = fields.shape;
  const std::string described = shape_text(array.shape) + " " + npy_type_name(array.type) + " array";
  if (fields.fortran_order)
    throw Error(path + ": the " + described + " is in Fortran order: save a C-ordered array, e.g. " +
                "np.save(path, np.ascontiguousarray(a))");

  // The element count and byte size, checked for overflow; a zero dimension
  // empties the array whatever the others are.
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t count = 1;
  bool empty = false;
  for (uint64_t d : array.shape) empty = empty || d == 0;
  for (uint64_t d : array.shape) {
    if (empty) {
      count = 0;
      break;
    }
    if (count > kMax / d)
      throw Error(path + ": the shape " + shape_text(array.shape) + " has more elements than fit in 64 bits");
    count *= d;
  }
  const uint64_t item = npy_type_size(array.type);
  if (count > kMax / item)
    throw Error(path + ": the " + described + " is too large: its size in bytes does not fit in 64 bits");
  const uint64_t data_bytes = count * item;
  const uint64_t available = file_bytes - preamble_bytes - header_bytes;
  if (data_bytes > available)
    throw Error(path + ": truncated: the " + described + " needs " + std::to_string(data_bytes) +
                " data bytes, the file has " + std::to_string(available));
  if (data_bytes < available)
    throw Error(path + ": " + std::to_string(available - data_bytes) + " trailing bytes after the " +
                std::to_string(data_bytes) + " data bytes of the " + described);

  // Safe to allocate: the size is that of the file itself.
  array.data.resize(static_cast<size_t>(data_bytes));
  const size_t data_got = file.read(array.data.data(), array.data.size());
  if (data_got < data_bytes)
    throw Error(path + ": truncated: the " + described + " needs " + std::to_string(data_bytes) +
                " data bytes, read only " + std::to_string(data_got) +
                " (the file shrank while being read?)");
  std::byte extra{};
  if (file.read(&extra, 1) != 0)
    throw Error(path + ": trailing bytes after the " + std::to_string(data_bytes) + " data bytes of the " +
                described + " (the file grew while being read?)");
  return array;
}

std::vector<float> npy_to_float(const NpyArray& array) {
  std::vector<float> values(array.count());
  const bool boolean = array.type == NpyType::Bool;
  for_each_value(
      array, [&](size_t i, auto v) { values[i] = boolean ? (v != 0 ? 1.0f : 0.0f) : static_cast<float>(v); });
  return values;
}

std::vector<int64_t> npy_to_int64(const NpyArray& array, const std::string& what) {
  std::vector<int64_t> values(array.count());
  const bool boolean = array.type == NpyType::Bool;
  for_each_value(array, [&](size_t i, auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(v) || std::trunc(v) != v)
        throw Error(what + ": value " + number_text(v) + " at index " + std::to_string(i) +
                    " is not an integer");
      // -2^63 is representable as an int64, 2^63 is not.
      if (v < -0x1p63 || v >= 0x1p63)
        throw Error(what + ": value " + number_text(v) + " at index " + std::to_string(i) +
                    " does not fit in a 64-bit integer");
      values[i] = static_cast<int64_t>(v);
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw Error(what + ": value " + std::to_string(v) + " at index " + std::to_string(i) +
                    " does not fit in a 64-bit signed integer");
      values[i] = static_cast<int64_t>(v);
    } else {
      values[i] = boolean ? (v != 0 ? 1 : 0) : static_cast<int64_t>(v);
    }
  });
  return values;
}

Dataset load_npy_dataset(const std::string& features_path, const std::string& labels_path,
                                const std::string& name, int num_classes) {
  if (num_classes < 0)
    throw Error("data set '" + name + "': number of classes " + std::to_string(num_classes) +
                " is negative (0 means the largest label + 1)");

  const NpyArray features = read_npy(features_path);
  if (features.shape.empty())
    throw Error(features_path +
                ": features need the samples along the first dimension, as in shape (N, 784); " +
                "got a scalar, shape ()");
  const uint64_t samples = features.shape[0];
  if (samples == 0)
    throw Error(features_path + ": holds no samples (shape " + shape_text(features.shape) + ")");
  std::vector<int64_t> sample_shape;
  for (size_t k = 1; k < features.shape.size(); ++k) {
    if (features.shape[k] == 0)
      throw Error(features_path + ": dimension " + std::to_string(k) + " of the shape " +
                  shape_text(features.shape) + " is zero, so samples are empty");
    // Each dimension is at most the element count, which the file's size bounds.
    sample_shape.push_back(static_cast<int64_t>(features.shape[k]));
  }
  if (sample_shape.empty()) sample_shape = {1};

  const NpyArray labels = read_npy(labels_path);
  if (labels.shape.empty())
    throw Error(labels_path + ": labels need the samples along the first dimension: one class per sample "
                "(shape (N,)) or one target per position (shape (N, T)); got a scalar, shape ()");
  // (N,): a class per sample; (N, T, ...): a target per position (language modelling).
  std::vector<int64_t> label_shape;
  for (size_t k = 1; k < labels.shape.size(); ++k) {
    if (labels.shape[k] == 0)
      throw Error(labels_path + ": dimension " + std::to_string(k) + " of the shape " + shape_text(labels.shape) +
                  " is zero, so samples have no targets");
    label_shape.push_back(static_cast<int64_t>(labels.shape[k]));
  }
  if (labels.shape[0] != samples)
    throw Error(features_path + " holds " + std::to_string(samples) + " samples but " + labels_path +
                " holds " + std::to_string(labels.shape[0]) + " labels");
  std::vector<int64_t> label_values = npy_to_int64(labels, labels_path);
  int classes = num_classes;
  if (classes == 0) {
    // Dataset keeps the class count in an int.
    constexpr int64_t kMaxLabel = std::numeric_limits<int>::max() - 1;
    int64_t largest = 0;
    for (size_t i = 0; i < label_values.size(); ++i) {
      const int64_t v = label_values[i];
      if (v < 0 || v > kMaxLabel)
        throw Error(labels_path + ": label " + std::to_string(v) + " at index " + std::to_string(i) +
                    (v < 0 ? " is negative (class labels start at 0)"
                           : " is too large for a class index (at most " + std::to_string(kMaxLabel) + ")"));
      largest = std::max(largest, v);
    }
    classes = static_cast<int>(largest + 1);
  } else {
    for (size_t i = 0; i < label_values.size(); ++i)
      if (label_values[i] < 0 || label_values[i] >= classes)
        throw Error(labels_path + ": label " + std::to_string(label_values[i]) + " at index " +
                    std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
  }

  std::vector<float> values;
  if (features.type == NpyType::UInt8 && label_shape.empty()) {
    // Bytes are pixels, as in the IDX images: the same table, the same values.
    // (With a target per position they are token ids, which stay as they are.)
    std::array<float, 256> pixel_value{};
    for (size_t b = 0; b < pixel_value.size(); ++b) pixel_value[b] = static_cast<float>(b) / 255.f;
    values.resize(features.data.size());
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = pixel_value[std::to_integer<uint8_t>(features.data[i])];
  } else {
    values = npy_to_float(features);
  }
  const size_t sample_numel = values.size() / samples;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i])) continue;
    const bool overflowed =
        features.type == NpyType::Float64 && std::isfinite(load_le<double>(features.data.data() + 8 * i));
    throw Error(features_path + ": feature " + number_text(values[i]) + " at index " + std::to_string(i) +
                " (sample " + std::to_string(i / sample_numel) + ") is not finite" +
                (overflowed
                     ? " (a float64 value " + number_text(load_le<double>(features.data.data() + 8 * i)) +
                           " beyond float32's range)"
                     : ""));
  }
  if (!label_shape.empty()) {
    // Language modelling: the features are token ids too, so each is a whole
    // number in the vocabulary (which, unless given, grows to hold them).
    // An id past it reached the embedding as a LibTorch error mid-run.
    for (size_t i = 0; i < values.size(); ++i) {
      const float v = values[i];
      if (v < 0 || v != std::floor(v) || v >= 16777216.f)
        throw Error(features_path + ": token id " + number_text(v) + " at index " + std::to_string(i) +
                    " is not a whole number in [0, 2^24)");
      if (v >= static_cast<float>(classes)) {
        if (num_classes > 0)
          throw Error(features_path + ": token id " + number_text(v) + " at index " + std::to_string(i) +
                      " is outside the vocabulary [0, " + std::to_string(classes) + ") (data.classes)");
        classes = static_cast<int>(v) + 1;
      }
    }
  }
  return Dataset(name, std::move(sample_shape), std::move(values), std::move(label_values), classes,
                 std::move(label_shape));
}

std::vector<std::byte> npy_file_bytes(const NpyArray& array) {
  if (array.data.size() != array.count() * npy_type_size(array.type))
    throw Error("a .npy array of shape " + shape_text(array.shape) + " " + npy_type_name(array.type) + " needs " +
                std::to_string(array.count() * npy_type_size(array.type)) + " bytes of data, not " +
                std::to_string(array.data.size()));
  std::string header = "{'descr': '" + npy_type_name(array.type) + "', 'fortran_order': False, 'shape': " +
                       shape_text(array.shape) + ", }";
  // Padded with spaces and ended by a newline so that the data starts at a multiple of 64.
  const auto padded = [&](size_t preamble) {
    std::string h = header;
    h.append((64 - (preamble + h.size() + 1) % 64) % 64, ' ');
    return h + '\n';
  };
  std::string text = padded(10);
  const int major = text.size() <= std::numeric_limits<uint16_t>::max() ? 1 : 2;
  if (major == 2) text = padded(12);
  std::vector<std::byte> bytes;
  bytes.reserve(12 + text.size() + array.data.size());
  for (uint8_t b : kMagic) bytes.push_back(std::byte{b});
  bytes.push_back(std::byte{static_cast<uint8_t>(major)});
  bytes.push_back(std::byte{0});
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) bytes.push_back(std::byte{static_cast<uint8_t>(text.size() >> (8 * i))});
  for (char c : text) bytes.push_back(static_cast<std::byte>(c));
  bytes.insert(bytes.end(), array.data.begin(), array.data.end());
  return bytes;
}

void write_npy(const std::string& path, const NpyArray& array, const std::string& label) {
  write_file_atomically(path, npy_file_bytes(array), label);
}

namespace {

template <typename T>
NpyArray little_endian_array(NpyType type, std::vector<uint64_t> shape, std::span<const T> values) {
  NpyArray array;
  array.type = type;
  array.shape = std::move(shape);
  array.data.resize(values.size() * sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {
    const auto bits = std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(values[i]);
    for (size_t b = 0; b < sizeof(T); ++b) array.data[i * sizeof(T) + b] = std::byte{static_cast<uint8_t>(bits >> (8 * b))};
  }
  return array;
}

}  // namespace

NpyArray npy_array(std::vector<uint64_t> shape, std::span<const int64_t> values) {
  return little_endian_array(NpyType::Int64, std::move(shape), values);
}

NpyArray npy_array(std::vector<uint64_t> shape, std::span<const float> values) {
  return little_endian_array(NpyType::Float32, std::move(shape), values);
}

void write_npy_dataset(const Dataset& data, const std::string& features_path, const std::string& labels_path,
                       const std::string& label) {
  const auto with_samples = [&](const std::vector<int64_t>& per_sample) {
    std::vector<uint64_t> shape = {data.size()};
    for (int64_t d : per_sample) shape.push_back(static_cast<uint64_t>(d));
    return shape;
  };
  if (data.task() == Task::LanguageModel) {
    // Token ids are stored exactly as floats (below 2^24).
    std::vector<int64_t> tokens(data.features().begin(), data.features().end());
    write_npy(features_path, npy_array(with_samples(data.sample_shape()), std::span<const int64_t>(tokens)), label);
  } else {
    write_npy(features_path, npy_array(with_samples(data.sample_shape()), data.features()), label);
  }
  write_npy(labels_path, npy_array(with_samples(data.label_shape()), data.labels()), label);
}

}  // namespace ptrain
