#include "comm/allgather_values.hpp"

namespace ptrain {

std::vector<KindAndText> allgather_kind_and_text(Communicator& comm, uint8_t kind, std::string_view text) {
  std::vector<std::byte> said(1 + text.size());
  said[0] = static_cast<std::byte>(kind);
  std::memcpy(said.data() + 1, text.data(), text.size());
  std::vector<KindAndText> all;
  for (const auto& bytes : comm.allgatherv(said)) {
    if (bytes.empty()) throw Error("allgather: a worker sent no kind");
    all.push_back({static_cast<uint8_t>(bytes[0]),
                   std::string(reinterpret_cast<const char*>(bytes.data()) + 1, bytes.size() - 1)});
  }
  return all;
}

}  // namespace ptrain
