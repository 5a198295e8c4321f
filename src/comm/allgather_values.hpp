#pragma once
// Small gathers every worker makes alike: one plain value each, or a kind
// (one byte) and a text each, handed to every worker in rank order.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "comm/communicator.hpp"
#include "core/error.hpp"

namespace ptrain {

// `mine` is a copy on purpose: the others read it while this worker's
// collective may update what it was copied from (a communicator's counters).
template <class T>
std::vector<T> allgather_value(Communicator& comm, const T mine) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<T> all;
  for (const auto& bytes : comm.allgatherv(std::as_bytes(std::span<const T>(&mine, 1)))) {
    if (bytes.size() != sizeof(T))
      throw Error("allgather: a worker sent " + std::to_string(bytes.size()) + " bytes for a value of " +
                  std::to_string(sizeof(T)));
    T value;
    std::memcpy(&value, bytes.data(), sizeof value);
    all.push_back(value);
  }
  return all;
}

// The wire form of a typed vote: what each worker says, and why.
struct KindAndText {
  uint8_t kind = 0;
  std::string text;
};
std::vector<KindAndText> allgather_kind_and_text(Communicator& comm, uint8_t kind, std::string_view text);

}  // namespace ptrain
