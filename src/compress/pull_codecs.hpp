#pragma once
// What a parameter-server shard sends a worker that pulls (the plan's `pull`,
// --pull): the dense fp32 parameters, or a codec's encoding of how they
// changed since that worker's last pull (ps/pull_encoder.hpp). The shard keeps
// what each worker holds and adds to it exactly what the worker decodes, so
// what a codec leaves out of one pull is in the next one's change: the error
// never accumulates. Each kind is an options struct here and one line in
// PullCodecRegistry (compress/pull_codec_registry.hpp); the encoding itself is
// the gradient codec of the same name, without memory of its own (nor
// randomness: one codec serves every worker's pulls).
#include <cstdint>
#include <memory>
#include <string_view>

#include "compress/codec.hpp"
#include "compress/int8_codec.hpp"
#include "core/fields.hpp"

namespace ptrain {

// Every pull the dense parameters, as they are.
struct DensePullOptions {
  static constexpr std::string_view name = "none";
  static constexpr std::string_view summary = "the parameters as dense fp32";
  template <class Self, class Visit>
  static void fields(Self&, Visit&&) {}
  std::unique_ptr<Codec> make(const CodecRange&) const { return nullptr; }
  size_t refresh_every() const { return 0; }
  double bytes_per_value() const { return 4; }
};

struct Fp16PullOptions {
  static constexpr std::string_view name = "fp16";
  static constexpr std::string_view summary = "the change since the worker's last pull, as IEEE halves";
  template <class Self, class Visit>
  static void fields(Self&, Visit&&) {}
  std::unique_ptr<Codec> make(const CodecRange& range) const;
  size_t refresh_every() const { return 0; }
  double bytes_per_value() const { return 2; }
};

struct Int8PullOptions {
  static constexpr std::string_view name = "int8";
  static constexpr std::string_view summary =
      "the change since the worker's last pull, as 8-bit integers with one scale per chunk";
  size_t chunk = 1024;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("chunk", s.chunk, "elements of the change sharing one scale", Range::at_least(1));
  }
  std::unique_ptr<Codec> make(const CodecRange& range) const;
  size_t refresh_every() const { return 0; }
  double bytes_per_value() const { return 1 + 4.0 / static_cast<double>(chunk); }
};

// Sparse deltas: the k largest changes, and every `refresh` pulls the whole
// parameters, so that no value the worker holds is older than that.
struct TopkPullOptions {
  static constexpr std::string_view name = "topk";
  static constexpr std::string_view summary =
      "the k largest changes since the worker's last pull, with a dense refresh every N pulls";
  double ratio = 0.1;
  size_t refresh = 50;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("ratio", s.ratio, "fraction of the changes sent each pull", Range::fraction());
    visit("refresh", s.refresh, "every N-th pull of a worker is the dense parameters (0: never)", Range{});
  }
  std::unique_ptr<Codec> make(const CodecRange& range) const;
  size_t refresh_every() const { return refresh; }
  // (index, value) pairs for the ratio, a dense pull every `refresh`.
  double bytes_per_value() const {
    const double sparse = 8 * ratio;
    return refresh == 0 ? sparse : (sparse * static_cast<double>(refresh - 1) + 4) / static_cast<double>(refresh);
  }
};

}  // namespace ptrain
