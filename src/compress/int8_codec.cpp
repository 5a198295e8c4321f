#include "compress/int8_codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hpp"

namespace ptrain {

namespace {

constexpr float kLevels = 127.0f;

size_t chunks_for(size_t count, size_t chunk) { return (count + chunk - 1) / chunk; }

// max|x| / 127, moved up where needed so that max|x| / scale <= 127.5: then
// the nearest q of every value in the chunk is within [-127, 127], and no
// value loses more than scale / 2 to the clamp. Only tiny (subnormal) scales,
// which carry few bits, ever move.
float scale_for(float max_abs) {
  float scale = max_abs / kLevels;
  while (scale == 0 || static_cast<double>(max_abs) / static_cast<double>(scale) > 127.5)
    scale = std::nextafter(scale, std::numeric_limits<float>::infinity());
  return scale;
}

// Round to nearest, ties to even, for |y| < 2^51: adding 1.5 * 2^52 leaves no
// fraction bits in the double. (A plain expression: no library call.)
double round_nearest(double y) { return (y + 0x1.8p52) - 0x1.8p52; }

// floor(z) for |z| < 2^62.
double round_down(double z) {
  const auto t = static_cast<double>(static_cast<int64_t>(z));  // toward zero
  return t > z ? t - 1 : t;
}

std::byte to_byte(double q) {
  const double clamped = std::clamp(q, -127.0, 127.0);
  return static_cast<std::byte>(static_cast<uint8_t>(static_cast<int8_t>(clamped)));
}

}  // namespace

std::unique_ptr<Codec> Int8Options::make(const CodecRange& range, uint64_t seed, float) const {
  return std::make_unique<Int8Codec>(*this, range, seed);
}

Int8Codec::Int8Codec(const Int8Options& options, const CodecRange& range, uint64_t seed)
    : count_(range.count), chunk_(options.chunk), stochastic_(options.rounding == Rounding::Stochastic), rng_(seed) {
  if (chunk_ < 1) throw Error("codec.chunk must be at least 1");
}

size_t Int8Codec::encoded_size(size_t count, size_t chunk) {
  return chunks_for(count, chunk) * sizeof(float) + count;
}

Encoded Int8Codec::encode(std::span<const float> grad, const StepInfo&) {
  if (grad.size() != count_)
    throw Error(fmt::format("int8 codec: encode got {} floats for a range of {}", grad.size(), count_));
  Encoded e;
  e.count = grad.size();
  e.bytes.resize(encoded_size(grad.size(), chunk_));
  const size_t chunks = chunks_for(grad.size(), chunk_);
  std::byte* const scales = e.bytes.data();
  std::byte* const values = e.bytes.data() + chunks * sizeof(float);
  for (size_t c = 0; c < chunks; ++c) {
    const size_t begin = c * chunk_, n = std::min(chunk_, grad.size() - begin);
    const std::span<const float> x = grad.subspan(begin, n);
    float max_abs = 0;
    bool finite = true;
    for (const float v : x) {
      const float a = std::fabs(v);
      finite &= a <= std::numeric_limits<float>::max();  // false for inf and NaN
      max_abs = a > max_abs ? a : max_abs;
    }
    float scale = 0;
    if (!finite) {
      scale = std::numeric_limits<float>::quiet_NaN();
    } else if (max_abs > 0) {
      scale = scale_for(max_abs);
    }
    std::memcpy(scales + c * sizeof(float), &scale, sizeof(float));
    std::byte* const q = values + begin;
    if (!(scale > 0)) {  // zeros, or not finite
      std::fill(q, q + n, std::byte{0});
      continue;
    }
    // x / scale in double is correctly rounded, so the rounding below decides
    // as exact arithmetic would: the error bounds hold exactly, ties included.
    const auto s = static_cast<double>(scale);
    if (stochastic_) {
      for (size_t i = 0; i < n; ++i) {
        // u in [0, 1) on a grid of 2^-32: y + u, rounded, stays below the
        // integer above y (|y| <= 128 leaves 2^-45 of room), so floor never overshoots.
        const double u = static_cast<double>(rng_.next() >> 32) * 0x1p-32;
        q[i] = to_byte(round_down(static_cast<double>(x[i]) / s + u));
      }
    } else {
      for (size_t i = 0; i < n; ++i) q[i] = to_byte(round_nearest(static_cast<double>(x[i]) / s));
    }
  }
  stats_.dense_bytes += grad.size_bytes();
  stats_.encoded_bytes += e.bytes.size();
  return e;
}

void Int8Codec::decode_add(const Encoded& e, std::span<float> out) const {
  if (e.count != out.size() || e.bytes.size() != encoded_size(e.count, chunk_))
    throw Error(fmt::format(
        "int8 codec: cannot decode {} bytes announced as {} floats in chunks of {} into {} floats",
        e.bytes.size(), e.count, chunk_, out.size()));
  const size_t chunks = chunks_for(e.count, chunk_);
  const std::byte* const values = e.bytes.data() + chunks * sizeof(float);
  for (size_t c = 0; c < chunks; ++c) {
    float scale;
    std::memcpy(&scale, e.bytes.data() + c * sizeof(float), sizeof(float));
    const size_t begin = c * chunk_, n = std::min(chunk_, e.count - begin);
    for (size_t i = begin; i < begin + n; ++i)
      out[i] += static_cast<float>(static_cast<int8_t>(std::to_integer<uint8_t>(values[i]))) * scale;
  }
}

}  // namespace ptrain
