#pragma once
// A checkpoint part's records (core/state_stream: name length, name, byte
// count, bytes) taken apart, edited and put together again: for tests that
// hand the readers state that reads well record by record but is wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/state_stream.hpp"

namespace ptrain::test {

using Records = std::vector<std::pair<std::string, std::vector<std::byte>>>;

inline Records records_of(std::span<const std::byte> state) {
  Records records;
  for (size_t at = 0; at < state.size();) {
    uint32_t name_size = 0;
    uint64_t size = 0;
    std::memcpy(&name_size, state.data() + at, sizeof name_size);
    std::string name(reinterpret_cast<const char*>(state.data() + at + 4), name_size);
    std::memcpy(&size, state.data() + at + 4 + name_size, sizeof size);
    const auto* bytes = state.data() + at + 12 + name_size;
    records.emplace_back(std::move(name), std::vector<std::byte>(bytes, bytes + size));
    at += 12 + name_size + size;
  }
  return records;
}

inline std::vector<std::byte> state_of(const Records& records) {
  StateWriter w;
  for (const auto& [name, bytes] : records) w.put_bytes(name, bytes);
  return w.take();
}

// Changes the values of record `name` (read as T).
template <class T>
void edit(Records& records, const std::string& name, const std::function<void(std::vector<T>&)>& change) {
  for (auto& [n, bytes] : records) {
    if (n != name) continue;
    std::vector<T> values(bytes.size() / sizeof(T));
    if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());  // never with null pointers
    change(values);
    bytes.assign(reinterpret_cast<const std::byte*>(values.data()),
                 reinterpret_cast<const std::byte*>(values.data() + values.size()));
    return;
  }
  ADD_FAILURE() << "no record " << name;
}

// `state` with record `name` changed.
template <class T>
std::vector<std::byte> edited(std::span<const std::byte> state, const std::string& name,
                              const std::function<void(std::vector<T>&)>& change) {
  Records records = records_of(state);
  edit<T>(records, name, change);
  return state_of(records);
}

}  // namespace ptrain::test
