// The fp16 codec: exact on values a half holds, nearest half otherwise,
// saturation counted, the wire form an array of halves.
#include "compress/codec_registry.hpp"
#include "compress/fp16_codec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "core/half.hpp"
#include "core/rng.hpp"

namespace ptrain {
namespace {

Fp16Codec codec_for(size_t count) {
  CodecRange range;
  range.count = count;
  return Fp16Codec(range);
}

std::vector<uint16_t> wire_halves(const Encoded& e) {
  std::vector<uint16_t> halves(e.bytes.size() / 2);
  if (!halves.empty()) std::memcpy(halves.data(), e.bytes.data(), halves.size() * 2);
  return halves;
}

TEST(Fp16Codec, RepresentableValuesComeBackExactly) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000003}}) {
    Rng rng(n);
    std::vector<float> grad(n);
    for (auto& g : grad) {
      uint16_t h;
      do h = static_cast<uint16_t>(rng.next());
      while ((h & 0x7c00) == 0x7c00);  // finite halves only: subnormals, zeros and +-65504 included
      g = half_to_float(h);
    }
    auto codec = codec_for(n);
    const Encoded e = codec.encode(grad, StepInfo{});
    EXPECT_EQ(e.count, n);
    ASSERT_EQ(e.bytes.size(), 2 * n);
    std::vector<float> out(n, 0.0f);
    codec.decode_add(e, out);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(out[i] + 0.0f), std::bit_cast<uint32_t>(grad[i] + 0.0f)) << i;
    EXPECT_EQ(codec.stats().saturated, 0u);
    EXPECT_EQ(codec.stats().dense_bytes, 4 * n);
    EXPECT_EQ(codec.stats().encoded_bytes, 2 * n);
  }
}

TEST(Fp16Codec, WireFormIsTheNearestHalvesInMemoryOrder) {
  Rng rng(3);
  std::vector<float> grad(1001);
  for (auto& g : grad) g = (rng.uniform() - 0.5f) * std::ldexp(1.0f, static_cast<int>(rng.below(40)) - 25);
  auto codec = codec_for(grad.size());
  const auto halves = wire_halves(codec.encode(grad, StepInfo{}));
  for (size_t i = 0; i < grad.size(); ++i) ASSERT_EQ(halves[i], float_to_half(grad[i])) << i;
  // Little-endian as in memory: 1.0 (0x3c00) goes as 00 3c.
  const std::vector<float> one = {1.0f};
  auto small = codec_for(1);
  const Encoded e = small.encode(one, StepInfo{});
  EXPECT_EQ(e.bytes, (std::vector<std::byte>{std::byte{0x00}, std::byte{0x3c}}));
  EXPECT_TRUE(small.summable_as_half());
  EXPECT_EQ(small.name(), "fp16");
}

// Messages from 8 MiB up are written past the caches (core/streaming_copy.hpp),
// and a reused message buffer is overwritten whole: the same halves either way.
TEST(Fp16Codec, LargeMessagesAndReusedBuffersHoldTheNearestHalves) {
  Rng rng(4);
  std::vector<float> grad((size_t{4} << 20) + 7);  // 8 MiB + 14 bytes of halves, an odd tail
  for (auto& g : grad) g = (rng.uniform() - 0.5f) * std::ldexp(1.0f, static_cast<int>(rng.below(40)) - 25);
  grad[5] = 1e20f;  // saturates
  grad[grad.size() - 1] = std::numeric_limits<float>::infinity();
  auto codec = codec_for(grad.size());
  Encoded e;
  e.bytes.assign(2 * grad.size(), std::byte{0xAB});  // a previous step's bytes, to be overwritten
  codec.encode_into(grad, StepInfo{}, e);
  const auto halves = wire_halves(e);
  ASSERT_EQ(halves.size(), grad.size());
  uint64_t saturated = 0;
  for (size_t i = 0; i < grad.size(); ++i) ASSERT_EQ(halves[i], float_to_half_saturating(grad[i], saturated)) << i;
  EXPECT_EQ(codec.stats().saturated, saturated);
}

TEST(Fp16Codec, BeyondTheHalfRangeSaturatesAndIsCounted) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> grad = {70000.0f,      -1e20f, 65519.0f, inf,   -inf,
                                   std::nanf(""), 1.0f,   65520.0f, -3e38f};
  auto codec = codec_for(grad.size());
  const Encoded e = codec.encode(grad, StepInfo{});
  EXPECT_EQ(codec.stats().saturated, 4u);  // 70000, -1e20, 65520, -3e38
  std::vector<float> out(grad.size(), 0.0f);
  codec.decode_add(e, out);
  EXPECT_EQ(out[0], 65504.0f);
  EXPECT_EQ(out[1], -65504.0f);
  EXPECT_EQ(out[2], 65504.0f);  // rounds there anyway
  EXPECT_EQ(out[3], inf);
  EXPECT_EQ(out[4], -inf);
  EXPECT_TRUE(std::isnan(out[5]));
  EXPECT_EQ(out[6], 1.0f);
  EXPECT_EQ(out[7], 65504.0f);
  EXPECT_EQ(out[8], -65504.0f);
  // Cumulative over encodes.
  codec.encode(grad, StepInfo{});
  EXPECT_EQ(codec.stats().saturated, 8u);
  EXPECT_EQ(codec.stats().dense_bytes, 2 * 4 * grad.size());
  EXPECT_EQ(codec.stats().encoded_bytes, 2 * 2 * grad.size());
}

TEST(Fp16Codec, DecodeAddsIntoOutAndAcceptsAnotherWorkersOutput) {
  auto mine = codec_for(3), theirs = codec_for(3);
  const std::vector<float> grad = {0.5f, -0.25f, 3.0f};
  const Encoded e = theirs.encode(grad, StepInfo{});
  std::vector<float> out = {1.0f, 1.0f, 1.0f};
  mine.decode_add(e, out);
  mine.decode_add(e, out);
  EXPECT_EQ(out, (std::vector<float>{2.0f, 0.5f, 7.0f}));
}

TEST(Fp16Codec, WrongSizesAreErrors) {
  auto codec = codec_for(4);
  const std::vector<float> three(3, 1.0f);
  EXPECT_THROW(codec.encode(three, StepInfo{}), Error);
  const Encoded e = codec.encode(std::vector<float>(4, 1.0f), StepInfo{});
  std::vector<float> out(5);
  EXPECT_THROW(codec.decode_add(e, out), Error);
  Encoded truncated = e;
  truncated.bytes.pop_back();
  std::vector<float> four(4);
  EXPECT_THROW(codec.decode_add(truncated, four), Error);
}

TEST(Fp16Codec, MadeByName) {
  CodecConfig config;
  config.choice = *CodecRegistry::make("fp16");
  CodecRange range;
  range.count = 10;
  const auto codec = make_codec(config, range, 0);
  ASSERT_NE(codec, nullptr);
  EXPECT_EQ(codec->name(), "fp16");
  EXPECT_TRUE(codec->summable_as_half());
}

}  // namespace
}  // namespace ptrain
