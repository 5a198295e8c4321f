#include "compress/fp16_codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/error.hpp"
#include "core/half.hpp"
#include "core/streaming_copy.hpp"

namespace ptrain {

namespace {

// Halves go through a small buffer of uint16_t on their way to and from the
// byte vector, so no byte is read through a pointer of another type.
constexpr size_t kBlock = 2048;

}  // namespace

std::unique_ptr<Codec> Fp16Options::make(const CodecRange& range, uint64_t, float) const {
  return std::make_unique<Fp16Codec>(range);
}

Fp16Codec::Fp16Codec(const CodecRange& range) : count_(range.count) {}

void Fp16Codec::encode_into(std::span<const float> grad, const StepInfo&, Encoded& e) {
  if (grad.size() != count_)
    throw Error(fmt::format("fp16 codec: encode got {} floats for a range of {}", grad.size(), count_));
  e.count = grad.size();
  e.bytes.resize(encoded_size(grad.size()));
  // A message larger than the caches goes to memory anyway: past them, without
  // reading each line first. A smaller one stays cached for the all-reduce.
  const bool bypass = e.bytes.size() >= kBypassCacheBytes;
  // Converted straight into the message where the CPU can; else a block at a time through `halves`.
  const auto streamed = bypass ? floats_to_half_bytes_bypassing_cache(grad, e.bytes.data()) : std::nullopt;
  if (streamed) stats_.saturated += *streamed;
  uint16_t halves[kBlock];
  for (size_t b = 0; !streamed && b < grad.size(); b += kBlock) {
    const size_t m = std::min(kBlock, grad.size() - b);
    stats_.saturated += floats_to_halves_saturating(grad.subspan(b, m), {halves, m});
    if (bypass)
      copy_bypassing_cache(e.bytes.data() + b * sizeof(uint16_t), halves, m * sizeof(uint16_t));
    else
      std::memcpy(e.bytes.data() + b * sizeof(uint16_t), halves, m * sizeof(uint16_t));
  }
  if (bypass) finish_bypassing_copies();
  stats_.dense_bytes += grad.size_bytes();
  stats_.encoded_bytes += e.bytes.size();
}

void Fp16Codec::decode_add(const Encoded& e, std::span<float> out) const {
  if (e.count != out.size() || e.bytes.size() != encoded_size(e.count))
    throw Error(fmt::format("fp16 codec: cannot decode {} bytes announced as {} floats into {} floats",
                            e.bytes.size(), e.count, out.size()));
  uint16_t halves[kBlock];
  for (size_t b = 0; b < e.count; b += kBlock) {
    const size_t m = std::min(kBlock, e.count - b);
    std::memcpy(halves, e.bytes.data() + b * sizeof(uint16_t), m * sizeof(uint16_t));
    add_halves_to_floats({halves, m}, out.subspan(b, m));
  }
}

}  // namespace ptrain
