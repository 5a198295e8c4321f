#include "compress/int8_codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compress/int8_kernels.hpp"
#include "core/error.hpp"
#include "core/streaming_copy.hpp"

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

// floor(z) for |z| < 2^62.
double round_down(double z) {
  const auto t = static_cast<double>(static_cast<int64_t>(z));  // toward zero
  return t > z ? t - 1 : t;
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

void Int8Codec::encode_into(std::span<const float> grad, const StepInfo&, Encoded& e) {
  if (grad.size() != count_)
    throw Error(fmt::format("int8 codec: encode got {} floats for a range of {}", grad.size(), count_));
  e.count = grad.size();
  e.bytes.resize(encoded_size(grad.size(), chunk_));
  const size_t chunks = chunks_for(grad.size(), chunk_);
  std::byte* const scales = e.bytes.data();
  std::byte* const values = e.bytes.data() + chunks * sizeof(float);
  const bool bypass = e.bytes.size() >= kBypassCacheBytes;
  for (size_t c = 0; c < chunks; ++c) {
    const size_t begin = c * chunk_, n = std::min(chunk_, grad.size() - begin);
    const std::span<const float> x = grad.subspan(begin, n);
    const int8_kernels::ChunkRange range = int8_kernels::chunk_range(x);
    float scale = 0;
    if (!range.finite) {
      scale = std::numeric_limits<float>::quiet_NaN();
    } else if (range.max_abs > 0) {
      scale = scale_for(range.max_abs);
    }
    std::memcpy(scales + c * sizeof(float), &scale, sizeof(float));
    std::byte* const q = values + begin;
    if (!(scale > 0)) {  // zeros, or not finite
      std::fill(q, q + n, std::byte{0});
      continue;
    }
    if (stochastic_) {
      // x / scale in double is correctly rounded, so floor decides as exact arithmetic would.
      const auto s = static_cast<double>(scale);
      for (size_t i = 0; i < n; ++i) {
        // u in [0, 1) on a grid of 2^-32: y + u, rounded, stays below the
        // integer above y (|y| <= 128 leaves 2^-45 of room), so floor never overshoots.
        const double u = static_cast<double>(rng_.next() >> 32) * 0x1p-32;
        q[i] = int8_kernels::clamp_to_byte(round_down(static_cast<double>(x[i]) / s + u));
      }
    } else {
      int8_kernels::quantize_nearest(x, scale, q, bypass);
    }
  }
  if (bypass) finish_bypassing_copies();
  stats_.dense_bytes += grad.size_bytes();
  stats_.encoded_bytes += e.bytes.size();
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
    int8_kernels::dequantize_add(values + begin, scale, out.subspan(begin, n));
  }
}

}  // namespace ptrain
