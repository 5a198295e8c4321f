#include "ps/ps_protocol.hpp"

#include <cstring>
#include <string>

#include "core/error.hpp"

namespace ptrain {

template <typename Header>
std::vector<std::byte> ps_message(const Header& header, std::span<const std::byte> payload) {
  std::vector<std::byte> message(sizeof(Header) + payload.size());
  std::memcpy(message.data(), &header, sizeof(Header));
  if (!payload.empty()) std::memcpy(message.data() + sizeof(Header), payload.data(), payload.size());
  return message;
}

template <typename Header>
Header ps_header(std::span<const std::byte> message, const char* what) {
  if (message.size() < sizeof(Header))
    throw Error(std::string(what) + ": a message of " + std::to_string(message.size()) +
                " bytes is shorter than its header (" + std::to_string(sizeof(Header)) + " bytes)");
  Header header;
  std::memcpy(&header, message.data(), sizeof(Header));
  return header;
}

std::span<const std::byte> ps_payload(std::span<const std::byte> message, size_t header_bytes) {
  return message.subspan(header_bytes);
}

template std::vector<std::byte> ps_message(const PsRequest&, std::span<const std::byte>);
template std::vector<std::byte> ps_message(const PsDecision&, std::span<const std::byte>);
template std::vector<std::byte> ps_message(const PsParamsHeader&, std::span<const std::byte>);
template PsRequest ps_header(std::span<const std::byte>, const char*);
template PsDecision ps_header(std::span<const std::byte>, const char*);
template PsParamsHeader ps_header(std::span<const std::byte>, const char*);

}  // namespace ptrain
