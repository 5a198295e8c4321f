#pragma once
// int8 compression: the gradient in chunks of `chunk` elements,
// each chunk sent as one fp32 scale and one int8 per element.
//
// scale = max|x| / 127 over the chunk (0 for a chunk of zeros); each value goes
// as q = x / scale rounded to an integer and clamped to [-127, 127], and decodes
// to q * scale. Rounding is to nearest (|x - q scale| <= scale / 2), or with
// rounding Stochastic, stochastic: up with probability frac(x / scale), so
// that the decoded value is x on average (|x - q scale| < scale). The random
// numbers come from the codec's seed, so a run repeats bit for bit.
//
// Wire form for `count` floats, c = ceil(count / chunk) chunks (the last one
// may be shorter):
//   bytes [0, 4c)             c fp32 scales, chunk by chunk, in memory order
//                             (little-endian on the hosts we run on)
//   bytes [4c, 4c + count)    one int8 q per float, in order;
//                             float i decodes to q[i] * scale[i / chunk]
// The decoder needs the same chunk size: codecs of the same configuration
// decode each other's output.
//
// A chunk holding an inf or a NaN goes as scale NaN (and q = 0): it decodes to
// NaN throughout, so a diverged gradient stays visible instead of becoming a
// wrong finite one. Where max|x| / 127 would round to a scale that cannot
// represent max|x| within the bound (tiny subnormals), the scale is the next
// float up.
#include <string_view>

#include "compress/codec.hpp"
#include "core/fields.hpp"
#include "core/rng.hpp"

namespace ptrain {

enum class Rounding { Nearest, Stochastic };
template <>
struct EnumText<Rounding> {
  static constexpr std::array<std::string_view, 2> names = {"nearest", "stochastic"};
};

struct Int8Options {
  static constexpr std::string_view name = "int8";
  static constexpr std::string_view summary = "8-bit integers with one scale per chunk";
  size_t chunk = 1024;                  // elements sharing one scale
  Rounding rounding = Rounding::Nearest;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("chunk", s.chunk, "elements sharing one scale", Range::at_least(1));
    visit("rounding", s.rounding, "nearest, or stochastic (unbiased)", Range{});
  }
  std::unique_ptr<Codec> make(const CodecRange& range, uint64_t seed, float momentum) const;
  double dense_bytes_per_value() const { return 1 + 4.0 / static_cast<double>(chunk); }  // a float scale per chunk
};

class Int8Codec : public Codec {
 public:
  Int8Codec(const Int8Options& options, const CodecRange& range, uint64_t seed);

  std::string name() const override { return "int8"; }
  void encode_into(std::span<const float> grad, const StepInfo& step, Encoded& e) override;
  void decode_add(const Encoded& e, std::span<float> out) const override;

  // The wire form's size for `count` floats in chunks of `chunk`.
  static size_t encoded_size(size_t count, size_t chunk);

 protected:
  void save_own(StateWriter& out) const override { out.put_value("int8.rng", rng_.state()); }
  void load_own(StateReader& in) override { rng_.set_state(in.take_value<uint64_t>("int8.rng")); }

 private:
  size_t count_;
  size_t chunk_;
  bool stochastic_;
  Rng rng_;
};

}  // namespace ptrain
