// The int8 codec: the wire form as documented, each value within its error
// bound (checked exactly against the scales and integers on the wire), and
// stochastic rounding unbiased and repeatable.
#include "compress/codec_registry.hpp"
#include "compress/int8_codec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace ptrain {
namespace {

Int8Codec codec_for(size_t count, size_t chunk, bool stochastic, uint64_t seed = 5) {
  Int8Options config;
  config.chunk = chunk;
  config.rounding = stochastic ? Rounding::Stochastic : Rounding::Nearest;
  CodecRange range;
  range.count = count;
  return Int8Codec(config, range, seed);
}

// The wire form, read as the header documents it.
struct Wire {
  std::vector<float> scales;
  std::vector<int8_t> q;
};
Wire read_wire(const Encoded& e, size_t chunk) {
  Wire w;
  const size_t chunks = (e.count + chunk - 1) / chunk;
  EXPECT_EQ(e.bytes.size(), 4 * chunks + e.count);
  w.scales.resize(chunks);
  w.q.resize(e.count);
  if (e.count == 0) return w;  // (no memcpy from an empty vector's null pointer)
  std::memcpy(w.scales.data(), e.bytes.data(), 4 * chunks);
  std::memcpy(w.q.data(), e.bytes.data() + 4 * chunks, e.count);
  return w;
}

// Gradients whose chunks span many magnitudes, with some all-zero stretches.
std::vector<float> gradient(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    const float magnitude = std::ldexp(1.0f, static_cast<int>((i / 97) % 30) - 20);
    g[i] = (i / 500) % 7 == 3 ? 0.0f : (rng.uniform() * 2 - 1) * magnitude;
  }
  return g;
}

void expect_within_bound(const std::vector<float>& grad, size_t chunk, bool stochastic) {
  auto codec = codec_for(grad.size(), chunk, stochastic);
  const Encoded e = codec.encode(grad, StepInfo{});
  ASSERT_EQ(e.count, grad.size());
  const Wire w = read_wire(e, chunk);
  std::vector<float> out(grad.size(), 0.0f);
  codec.decode_add(e, out);
  for (size_t c = 0; c < w.scales.size(); ++c) {
    const size_t begin = c * chunk, end = std::min(grad.size(), begin + chunk);
    float max_abs = 0;
    for (size_t i = begin; i < end; ++i) max_abs = std::max(max_abs, std::fabs(grad[i]));
    const float scale = w.scales[c];
    if (max_abs == 0) {
      ASSERT_EQ(scale, 0.0f) << "chunk " << c;
      for (size_t i = begin; i < end; ++i) ASSERT_EQ(w.q[i], 0) << "i " << i;
      continue;
    }
    if (max_abs / 127.0f >= std::numeric_limits<float>::min()) {
      ASSERT_EQ(scale, max_abs / 127.0f) << "chunk " << c;
    } else {  // a subnormal scale may be moved up, so that max|x| is within 127.5 steps
      ASSERT_GE(scale, max_abs / 127.0f) << "chunk " << c;
      ASSERT_LE(max_abs / static_cast<double>(scale), 127.5) << "chunk " << c;
    }
    for (size_t i = begin; i < end; ++i) {
      ASSERT_GE(w.q[i], -127);
      ASSERT_LE(w.q[i], 127);
      // Exact in double: q * scale has 31 bits, and the difference is exact too.
      const double error = std::fabs(static_cast<double>(grad[i]) - w.q[i] * static_cast<double>(scale));
      if (stochastic) {
        ASSERT_LT(error, scale) << "i " << i;
      } else {
        ASSERT_LE(error, scale / 2.0) << "i " << i;
      }
      ASSERT_EQ(out[i], static_cast<float>(w.q[i]) * scale) << "i " << i;
    }
  }
  EXPECT_EQ(codec.stats().dense_bytes, 4 * grad.size());
  EXPECT_EQ(codec.stats().encoded_bytes, e.bytes.size());
}

class Int8Rounding : public ::testing::TestWithParam<bool> {};

TEST_P(Int8Rounding, EveryValueWithinItsBoundForEveryChunkSizeAndLength) {
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{1024}})
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1030}, size_t{1000003}}) {
      SCOPED_TRACE(testing::Message() << "chunk " << chunk << ", " << n << " floats");
      expect_within_bound(gradient(n, n + chunk), chunk, GetParam());
    }
}

TEST_P(Int8Rounding, ExtremesStayWithinTheBound) {
  const float tiny = std::numeric_limits<float>::denorm_min();
  const std::vector<std::vector<float>> cases = {
      {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 1.0f, 0.0f},
      {tiny, -tiny, 0.0f, tiny},
      {tiny * 200, tiny * 3, -tiny * 77, tiny * 1.4e2f},
      {std::numeric_limits<float>::min(), -std::numeric_limits<float>::min() / 3, 0.0f, 1e-40f},
      {1.0f, 0.5f / 127, 1.5f / 127, -2.5f / 127},  // ties at nearest
  };
  for (const auto& grad : cases) expect_within_bound(grad, 4, GetParam());
}

INSTANTIATE_TEST_SUITE_P(NearestAndStochastic, Int8Rounding, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "stochastic" : "nearest"; });

TEST(Int8Codec, ZeroChunksHaveScaleZeroAndDecodeToZero) {
  auto codec = codec_for(10, 4, false);
  std::vector<float> grad(10, 0.0f);
  grad[9] = -2.0f;
  const Encoded e = codec.encode(grad, StepInfo{});
  const Wire w = read_wire(e, 4);
  EXPECT_EQ(w.scales, (std::vector<float>{0.0f, 0.0f, 2.0f / 127}));
  std::vector<float> out(10, 1.0f);
  codec.decode_add(e, out);
  std::vector<float> expected(10, 1.0f);
  expected[9] = -1.0f;
  EXPECT_EQ(out, expected);
}

TEST(Int8Codec, NonFiniteChunkDecodesToNaN) {
  auto codec = codec_for(8, 4, false);
  std::vector<float> grad = {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, std::numeric_limits<float>::infinity(),
                             0.0f, 1.0f};
  std::vector<float> out(8, 0.0f);
  codec.decode_add(codec.encode(grad, StepInfo{}), out);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(out[i], grad[i], 4.0f / 127 / 2) << i;
  for (size_t i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(out[i])) << i;
  grad[5] = std::nanf("");
  out.assign(8, 0.0f);
  codec.decode_add(codec.encode(grad, StepInfo{}), out);
  for (size_t i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(out[i])) << i;
}

TEST(Int8Codec, StochasticRoundingIsUnbiasedOnAverage) {
  // Values off the grid of their chunk's scale (1/127); nearest rounding would
  // be off by up to half a step on each, every time.
  const std::vector<float> grad = {1.0f, 38.45f / 127, -0.77f, 0.01f, -0.004f, 0.5f, 0.123456f, -0.999f};
  const double scale = 1.0 / 127;
  auto codec = codec_for(grad.size(), grad.size(), true, 42);
  constexpr int kRounds = 20000;
  std::vector<double> sum(grad.size(), 0.0);
  for (int k = 0; k < kRounds; ++k) {
    std::vector<float> out(grad.size(), 0.0f);
    codec.decode_add(codec.encode(grad, StepInfo{static_cast<size_t>(k)}), out);
    for (size_t i = 0; i < grad.size(); ++i) sum[i] += out[i];
  }
  // Each decoded value is a two-point variable of spread <= scale: the mean's
  // standard deviation is <= scale / (2 sqrt(kRounds)). Allow eight of them.
  const double bound = 8 * scale / (2 * std::sqrt(static_cast<double>(kRounds)));
  for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(sum[i] / kRounds, grad[i], bound) << i;
  // Nearest rounding, for contrast, misses 38.45 steps by 0.45 of one, every time.
  auto nearest = codec_for(grad.size(), grad.size(), false);
  std::vector<float> out(grad.size(), 0.0f);
  nearest.decode_add(nearest.encode(grad, StepInfo{}), out);
  EXPECT_GT(std::fabs(out[1] - grad[1]), 10 * bound);
}

TEST(Int8Codec, StochasticRoundingRepeatsFromItsSeed) {
  const auto grad = gradient(5000, 9);
  auto a = codec_for(grad.size(), 64, true, 1), b = codec_for(grad.size(), 64, true, 1),
       c = codec_for(grad.size(), 64, true, 2);
  for (int step = 0; step < 3; ++step) {
    const Encoded ea = a.encode(grad, StepInfo{}), eb = b.encode(grad, StepInfo{}),
                  ec = c.encode(grad, StepInfo{});
    EXPECT_EQ(ea.bytes, eb.bytes);
    EXPECT_NE(ea.bytes, ec.bytes);
  }
}

TEST(Int8Codec, DecodeAddsAndAcceptsAnotherWorkersOutput) {
  auto mine = codec_for(3, 2, false), theirs = codec_for(3, 2, false);
  const std::vector<float> grad = {127.0f, -63.5f, 2.0f};
  const Encoded e = theirs.encode(grad, StepInfo{});
  std::vector<float> out = {1.0f, 1.0f, 1.0f};
  mine.decode_add(e, out);
  EXPECT_EQ(out, (std::vector<float>{128.0f, -63.0f, 3.0f}));  // -63.5 is a tie: to the even -64
  EXPECT_EQ(mine.name(), "int8");
  EXPECT_FALSE(mine.summable_as_half());
}

TEST(Int8Codec, WrongSizesAreErrors) {
  auto codec = codec_for(10, 4, false);
  EXPECT_THROW(codec.encode(std::vector<float>(9), StepInfo{}), Error);
  const Encoded e = codec.encode(std::vector<float>(10, 1.0f), StepInfo{});
  std::vector<float> out(9);
  EXPECT_THROW(codec.decode_add(e, out), Error);
  // Decoded with another chunk size, the layout does not add up.
  auto other = codec_for(10, 5, false);
  std::vector<float> ten(10);
  EXPECT_THROW(other.decode_add(e, ten), Error);
}

TEST(Int8Codec, MadeByName) {
  Int8Options int8;
  int8.chunk = 3;
  CodecConfig config;
  config.choice = *CodecRegistry::make("int8");
  std::get<Int8Options>(config.choice) = int8;
  CodecRange range;
  range.count = 10;
  const auto codec = make_codec(config, range, 0);
  ASSERT_NE(codec, nullptr);
  EXPECT_EQ(codec->name(), "int8");
  EXPECT_EQ(codec->encode(std::vector<float>(10, 1.0f), StepInfo{}).bytes.size(), 4 * 4 + 10u);
}

}  // namespace
}  // namespace ptrain
