#include "core/state_stream.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/printable.hpp"

namespace ptrain {

namespace {

template <class T>
void append(std::vector<std::byte>& out, const T& value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof value);
}

}  // namespace

void StateWriter::put_bytes(std::string_view name, std::span<const std::byte> bytes) {
  append(bytes_, static_cast<uint32_t>(name.size()));
  const auto* n = reinterpret_cast<const std::byte*>(name.data());
  bytes_.insert(bytes_.end(), n, n + name.size());
  append(bytes_, static_cast<uint64_t>(bytes.size()));
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
}

std::span<const std::byte> StateReader::next(std::string_view name) {
  auto read = [&](void* out, size_t n, const char* what) {
    if (bytes_.size() - at_ < n)
      throw Error(fmt::format("{}: truncated in the {} of record '{}'", source_, what, name));
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
  };
  uint32_t name_size = 0;
  read(&name_size, sizeof name_size, "name length");
  if (name_size > bytes_.size() - at_)
    throw Error(fmt::format("{}: truncated in the name of record '{}'", source_, name));
  const std::string_view found(reinterpret_cast<const char*>(bytes_.data() + at_), name_size);
  at_ += name_size;
  // The name found is whatever the bytes hold: shown escaped, on one line.
  if (found != name)
    throw Error(fmt::format("{}: expected record '{}', found '{}'", source_, name, printable(found, 40)));
  uint64_t size = 0;
  read(&size, sizeof size, "length");
  if (size > bytes_.size() - at_)
    throw Error(fmt::format("{}: record '{}' claims {} bytes, {} are left", source_, name, size, bytes_.size() - at_));
  const auto record = bytes_.subspan(at_, size);
  at_ += size;
  return record;
}

void StateReader::expect_end() const {
  if (at_ != bytes_.size())
    throw Error(fmt::format("{}: {} bytes after the last record this run reads", source_, bytes_.size() - at_));
}

void StateReader::require_size(std::string_view name, size_t have, size_t want) const {
  if (have != want)
    throw Error(fmt::format("{}: record '{}' holds {} bytes, this run needs {} (another model or settings?)", source_,
                            name, have, want));
}

void StateReader::require_multiple(std::string_view name, size_t have, size_t unit) const {
  if (have % unit != 0)
    throw Error(fmt::format("{}: record '{}' holds {} bytes, not a whole number of {}-byte values", source_, name,
                            have, unit));
}

}  // namespace ptrain
