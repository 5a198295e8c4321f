#pragma once
// What the fuzz targets share: inputs as files for the readers that take a
// path, the project's rule for refusing bad input, framed inputs, and the
// seed corpora each target writes from what ptrain itself writes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace ptrain::fuzz {

// A file in memory (memfd) that a reader opens by its path, as it would any
// file: /proc/self/fd/N.
class MemoryFile {
 public:
  explicit MemoryFile(const char* name);
  ~MemoryFile();
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  // Replaces the contents; returns the path.
  const std::string& hold(std::span<const uint8_t> bytes);
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// A directory of this process's own (under /dev/shm where there is one),
// emptied by clear() and removed when the process exits normally.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(const char* name);
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  void clear() const;

 private:
  std::string path_;
};

void write_file(const std::string& path, std::span<const uint8_t> bytes);

// The project's rule for bad input: a ptrain::Error whose message is one
// non-empty line (and starts with `prefix` when one is given). Anything else
// aborts, so that libFuzzer reports it with the input. With PTRAIN_FUZZ_VERBOSE
// set, every refusal is printed (to see what an input does).
void check_refusal(const Error& error, std::string_view prefix = {});

// Runs `read`; true when it returned, false when it refused the input with a
// ptrain::Error that keeps the rule. Any other exception escapes: libFuzzer
// reports it as a crash.
template <class Read>
bool accepted(Read&& read, std::string_view prefix = {}) {
  try {
    read();
    return true;
  } catch (const Error& error) {
    check_refusal(error, prefix);
    return false;
  }
}

// Aborts with `what` when `condition` is false: a property of an accepted input.
void require(bool condition, const std::string& what);

// An input read front to back: fixed-size values and length-prefixed chunks.
// Running out gives zeros and empty chunks, so every input means something.
class InputCursor {
 public:
  explicit InputCursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  template <class T>
  T take() {
    T value{};
    const size_t n = std::min(sizeof value, left());
    if (n > 0) std::memcpy(&value, bytes_.data() + at_, n);
    at_ += n;
    return value;
  }
  std::span<const uint8_t> take_bytes(size_t n) {
    n = std::min(n, left());
    const auto out = bytes_.subspan(at_, n);
    at_ += n;
    return out;
  }
  // A uint32 length, then that many bytes (or what is left).
  std::span<const uint8_t> take_chunk() { return take_bytes(take<uint32_t>()); }
  std::span<const uint8_t> rest() { return take_bytes(left()); }
  size_t left() const { return bytes_.size() - at_; }

 private:
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
};

// Builds seeds in the InputCursor's framing.
class InputBuilder {
 public:
  template <class T>
  InputBuilder& put(const T& value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof value);
    return *this;
  }
  InputBuilder& put_bytes(std::span<const uint8_t> bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    return *this;
  }
  InputBuilder& put_chunk(std::span<const uint8_t> bytes) {
    put(static_cast<uint32_t>(bytes.size()));
    return put_bytes(bytes);
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

inline std::span<const uint8_t> as_input(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}
inline std::span<const uint8_t> as_input(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

// Seeds: a target started with --write-seeds=DIR (libFuzzer ignores flags
// that start with "--") writes its seed corpus into DIR with `write` and
// exits. Call from LLVMFuzzerInitialize.
using SeedWriter = std::function<void(const std::string& dir)>;
void write_seeds_if_asked(int* argc, char*** argv, const SeedWriter& write);
void write_seed(const std::string& dir, const std::string& name, std::span<const uint8_t> bytes);
// A libFuzzer dictionary beside the seeds (DIR.dict): words the mutations
// insert whole, for formats whose words random bytes rarely spell.
void write_dictionary(const std::string& dir, const std::vector<std::string>& words);

}  // namespace ptrain::fuzz
