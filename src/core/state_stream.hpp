#pragma once
// Training state as named binary records, for checkpoints: each layer that
// keeps state between steps (an optimizer's moments, a codec's residuals, a
// strategy's turn counter) writes its own records and reads them back in the
// same order. A record is its name, its byte count and its bytes, so a reader
// names what is missing or of the wrong size instead of reading garbage.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ptrain {

template <class T>
concept StateValue = std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>;

class StateWriter {
 public:
  void put_bytes(std::string_view name, std::span<const std::byte> bytes);
  template <StateValue T>
  void put(std::string_view name, std::span<const T> values) {
    put_bytes(name, std::as_bytes(values));
  }
  template <StateValue T>
  void put(std::string_view name, const std::vector<T>& values) {
    put(name, std::span<const T>(values));
  }
  template <StateValue T>
  void put_value(std::string_view name, const T& value) {
    put(name, std::span<const T>(&value, 1));
  }
  void put_text(std::string_view name, std::string_view text) { put_bytes(name, std::as_bytes(std::span(text))); }

  const std::vector<std::byte>& bytes() const { return bytes_; }
  std::vector<std::byte> take() { return std::move(bytes_); }
  // Empties it, keeping its memory: the next state of the same size is written without growing it.
  void clear() { bytes_.clear(); }

 private:
  std::vector<std::byte> bytes_;
};

// Reads the records of `bytes` in order. Every mismatch throws ptrain::Error
// "<source>: ..." naming the record.
class StateReader {
 public:
  StateReader(std::span<const std::byte> bytes, std::string source) : bytes_(bytes), source_(std::move(source)) {}

  // The next record, which must be called `name`.
  std::span<const std::byte> next(std::string_view name);
  // Fills `out` exactly: the record must hold out.size() values.
  template <StateValue T>
  void take(std::string_view name, std::span<T> out) {
    const auto record = next(name);
    require_size(name, record.size(), out.size_bytes());
    if (!out.empty()) std::memcpy(out.data(), record.data(), record.size());
  }
  // A record of any length (a whole number of values).
  template <StateValue T>
  std::vector<T> take_vector(std::string_view name) {
    const auto record = next(name);
    require_multiple(name, record.size(), sizeof(T));
    std::vector<T> out(record.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), record.data(), record.size());
    return out;
  }
  template <StateValue T>
  T take_value(std::string_view name) {
    T value{};
    take(name, std::span<T>(&value, 1));
    return value;
  }
  std::string take_text(std::string_view name) {
    const auto record = next(name);
    return std::string(reinterpret_cast<const char*>(record.data()), record.size());
  }
  // Throws unless every record was read.
  void expect_end() const;
  const std::string& source() const { return source_; }

 private:
  void require_size(std::string_view name, size_t have, size_t want) const;
  void require_multiple(std::string_view name, size_t have, size_t unit) const;

  std::span<const std::byte> bytes_;
  size_t at_ = 0;
  std::string source_;
};

}  // namespace ptrain
