#include "compress/codec_registry.hpp"

#include "core/rng.hpp"

namespace ptrain {

bool compresses(const CodecChoice& choice) { return !std::holds_alternative<NoCompression>(choice); }

bool takes_momentum(const CodecChoice& choice, bool* required) {
  return std::visit(
      [&](const auto& c) {
        if constexpr (requires { c.momentum_correction; }) {
          if (required) *required = c.momentum_correction == Switch::On;
          return c.momentum_correction != Switch::Off;
        } else {
          if (required) *required = false;
          return false;
        }
      },
      choice);
}

std::optional<double> dense_bytes_per_value(const CodecChoice& choice) {
  return std::visit(
      [](const auto& c) -> std::optional<double> {
        if constexpr (requires { c.dense_bytes_per_value(); }) return c.dense_bytes_per_value();
        else return std::nullopt;
      },
      choice);
}

bool sparse(const CodecChoice& choice) {
  return std::visit(
      [](const auto& c) {
        if constexpr (requires { std::decay_t<decltype(c)>::sparse; }) return std::decay_t<decltype(c)>::sparse;
        else return false;
      },
      choice);
}

bool summed_on_the_wire(const CodecChoice& choice) {
  return std::visit(
      [](const auto& c) {
        if constexpr (requires { std::decay_t<decltype(c)>::summed_on_the_wire; })
          return std::decay_t<decltype(c)>::summed_on_the_wire;
        else return false;
      },
      choice);
}

std::unique_ptr<Codec> make_codec(const CodecConfig& config, const CodecRange& range, int worker) {
  const uint64_t seed = derive_seed(config.seed, 1000 + static_cast<uint64_t>(worker));
  return std::visit([&](const auto& c) { return c.make(range, seed, config.momentum); }, config.choice);
}

}  // namespace ptrain
