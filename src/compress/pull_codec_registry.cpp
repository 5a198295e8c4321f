#include "compress/pull_codec_registry.hpp"

namespace ptrain {

bool compresses_pulls(const PullCodecChoice& choice) { return !std::holds_alternative<DensePullOptions>(choice); }

size_t pull_refresh_every(const PullCodecChoice& choice) {
  return std::visit([](const auto& c) { return c.refresh_every(); }, choice);
}

double pull_bytes_per_value(const PullCodecChoice& choice) {
  return std::visit([](const auto& c) { return c.bytes_per_value(); }, choice);
}

std::unique_ptr<Codec> make_pull_codec(const PullCodecChoice& choice, const CodecRange& range) {
  return std::visit([&](const auto& c) { return c.make(range); }, choice);
}

}  // namespace ptrain
