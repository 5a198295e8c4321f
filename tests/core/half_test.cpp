// IEEE binary16 conversions: every half, every rounding tie between two
// halves, subnormals, saturation, and the F16C path against the portable one.
#include "core/half.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <limits>
#include <vector>

#include "core/rng.hpp"
#include "core/streaming_copy.hpp"

namespace ptrain {
namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

static_assert(float_to_half(1.0f) == 0x3c00);
static_assert(float_to_half(-2.0f) == 0xc000);
static_assert(float_to_half(65504.0f) == 0x7bff);
static_assert(half_to_float(0x3555) == 0x1.554p-2f);
static_assert(half_to_float(0x0001) == 0x1p-24f);

TEST(Half, KnownValues) {
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(-0x1p-24f), 0x8001);
  EXPECT_EQ(float_to_half(0x1.ff8p-15f), 0x03ff);  // largest subnormal
  EXPECT_EQ(float_to_half(0.1f), 0x2e66);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);  // below the tie with 65536: rounds down
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // the tie goes to the even "65536", inf
  EXPECT_EQ(float_to_half(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_EQ(bits(half_to_float(0x8000)), 0x80000000u);
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0xfc00), -std::numeric_limits<float>::infinity());
}

TEST(Half, EveryFiniteHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half = static_cast<uint16_t>(h);
    if (!half_is_finite(half)) continue;
    const float f = half_to_float(half);
    ASSERT_TRUE(std::isfinite(f)) << std::hex << h;
    ASSERT_EQ(float_to_half(f), half) << std::hex << h;
    uint64_t saturated = 0;
    ASSERT_EQ(float_to_half_saturating(f, saturated), half) << std::hex << h;
    ASSERT_EQ(saturated, 0u);
  }
}

TEST(Half, DecodesTheValueTheBitsMean) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half = static_cast<uint16_t>(h);
    if (!half_is_finite(half)) continue;
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const double magnitude = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    ASSERT_EQ(static_cast<double>(half_to_float(half)), (h & 0x8000) ? -magnitude : magnitude)
        << std::hex << h;
  }
}

TEST(Half, NaNsStayNaNsQuietWithSignAndPayload) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half = static_cast<uint16_t>(h);
    if (!half_is_nan(half)) continue;
    const float f = half_to_float(half);
    ASSERT_TRUE(std::isnan(f)) << std::hex << h;
    ASSERT_EQ(bits(f), ((h & 0x8000u) << 16) | 0x7fc00000u | ((h & 0x3ffu) << 13)) << std::hex << h;
    ASSERT_EQ(float_to_half(f), half | 0x200) << std::hex << h;
  }
  // A float NaN keeps its sign and the top of its payload; a signalling one comes out quiet.
  EXPECT_EQ(float_to_half(from_bits(0x7fc00000u)), 0x7e00);
  EXPECT_EQ(float_to_half(from_bits(0xffc00000u)), 0xfe00);
  EXPECT_EQ(float_to_half(from_bits(0x7f800001u)), 0x7e00);  // payload below the kept bits
  EXPECT_EQ(float_to_half(from_bits(0x7fa00000u)), 0x7f00);
  EXPECT_EQ(float_to_half(from_bits(0x7fffffffu)), 0x7fff);
}

// Between every two neighbouring finite halves of one sign (and from the
// largest to the overflow threshold), the midpoint rounds to the even one,
// and anything off the midpoint to the nearer one.
TEST(Half, TiesRoundToEvenEverywhere) {
  for (uint32_t sign : {0u, 0x8000u})
    for (uint32_t h = 0; h < 0x7c00; ++h) {
      const auto lo = static_cast<uint16_t>(sign | h), hi = static_cast<uint16_t>(sign | (h + 1));
      // The "half" above 65504 is 65536, which is inf.
      const double a = half_to_float(lo),
                   b = h + 1 == 0x7c00 ? (sign ? -65536.0 : 65536.0) : half_to_float(hi);
      const auto mid = static_cast<float>((a + b) / 2);  // exact: 12 bits
      ASSERT_EQ(static_cast<double>(mid), (a + b) / 2);
      const uint16_t even = (lo & 1) == 0 ? lo : hi;
      ASSERT_EQ(float_to_half(mid), even) << std::hex << lo;
      ASSERT_EQ(float_to_half(std::nextafter(mid, static_cast<float>(a))), lo) << std::hex << lo;
      ASSERT_EQ(float_to_half(std::nextafter(mid, static_cast<float>(b))), hi) << std::hex << lo;
    }
}

TEST(Half, SubnormalsAndUnderflow) {
  // Every multiple of 2^-24 below 2^-14 is a subnormal half, exactly.
  for (int m = 0; m < 1024; ++m) EXPECT_EQ(float_to_half(std::ldexp(static_cast<float>(m), -24)), m);
  // Half the smallest subnormal ties to zero; just above it rounds up.
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);
  EXPECT_EQ(float_to_half(-0x1p-25f), 0x8000);
  EXPECT_EQ(float_to_half(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half(0x1.8p-24f), 0x0002);  // 1.5 units: tie, to the even 2
  EXPECT_EQ(float_to_half(0x1.4p-24f), 0x0001);
  // The largest subnormal plus half a unit ties up into the smallest normal.
  EXPECT_EQ(float_to_half(0x1.ffcp-15f), 0x0400);
  EXPECT_EQ(float_to_half(1e-30f), 0x0000);
}

TEST(Half, SaturatingConversionClampsAndCounts) {
  uint64_t saturated = 0;
  EXPECT_EQ(float_to_half_saturating(65520.0f, saturated), 0x7bff);
  EXPECT_EQ(float_to_half_saturating(-65520.0f, saturated), 0xfbff);
  EXPECT_EQ(float_to_half_saturating(std::numeric_limits<float>::max(), saturated), 0x7bff);
  EXPECT_EQ(float_to_half_saturating(-1e20f, saturated), 0xfbff);
  EXPECT_EQ(saturated, 4u);
  // Not counted: what rounds to 65504 anyway, infinities, NaNs.
  EXPECT_EQ(float_to_half_saturating(65519.0f, saturated), 0x7bff);
  EXPECT_EQ(float_to_half_saturating(std::nextafter(65520.0f, 0.0f), saturated), 0x7bff);
  EXPECT_EQ(float_to_half_saturating(std::numeric_limits<float>::infinity(), saturated), 0x7c00);
  EXPECT_EQ(float_to_half_saturating(-std::numeric_limits<float>::infinity(), saturated), 0xfc00);
  EXPECT_TRUE(half_is_nan(float_to_half_saturating(std::numeric_limits<float>::quiet_NaN(), saturated)));
  EXPECT_EQ(saturated, 4u);
  EXPECT_TRUE(half_saturates(70000.0f));
  EXPECT_FALSE(half_saturates(65504.0f));
}

TEST(Half, AdditionIsInFp32RoundedOnceAndSaturates) {
  EXPECT_EQ(add_halves_saturating(float_to_half(1.0f), float_to_half(2.0f)), float_to_half(3.0f));
  // 2048 + 1 is a tie between 2048 and 2050: to the even 2048.
  EXPECT_EQ(add_halves_saturating(float_to_half(2048.0f), float_to_half(1.0f)), float_to_half(2048.0f));
  EXPECT_EQ(add_halves_saturating(float_to_half(2048.0f), float_to_half(3.0f)), float_to_half(2052.0f));
  EXPECT_EQ(add_halves_saturating(kHalfMax, kHalfMax), kHalfMax);
  EXPECT_EQ(add_halves_saturating(float_to_half(-40000.0f), float_to_half(-40000.0f)), 0xfbff);
  EXPECT_EQ(add_halves_saturating(float_to_half(60000.0f), float_to_half(-40000.0f)),
            float_to_half(20000.0f));
  EXPECT_EQ(add_halves_saturating(kHalfInfinity, float_to_half(1.0f)), kHalfInfinity);
  // NaN sums lose their payloads, whatever the order of the operands.
  EXPECT_EQ(add_halves_saturating(kHalfInfinity, 0xfc00), kHalfNaN);
  EXPECT_EQ(add_halves_saturating(0xfe12, float_to_half(1.0f)), kHalfNaN);
  EXPECT_EQ(add_halves_saturating(0x7c01, 0xfd00), kHalfNaN);
  EXPECT_EQ(add_halves_saturating(0xfd00, 0x7c01), kHalfNaN);
}

// Floats that exercise every rounding path: random bit patterns, every tie
// between halves and its neighbours, values around the overflow threshold,
// specials.
std::vector<float> interesting_floats() {
  std::vector<float> v;
  Rng rng(7);
  for (int i = 0; i < (1 << 20); ++i) v.push_back(from_bits(static_cast<uint32_t>(rng.next())));
  // Random floats within the half range, where most of the rounding happens.
  for (int i = 0; i < (1 << 18); ++i)
    v.push_back(from_bits(static_cast<uint32_t>(0x33000000u + rng.below(0x477ff000u - 0x33000000u + 16)) |
                          (i % 2 ? 0x80000000u : 0u)));
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const double a = half_to_float(static_cast<uint16_t>(h));
    const double b = h + 1 == 0x7c00 ? 65536.0 : half_to_float(static_cast<uint16_t>(h + 1));
    const auto mid = static_cast<float>((a + b) / 2);
    for (const float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      v.push_back(f);
      v.push_back(-f);
    }
  }
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, 1e30f, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min()}) {
    v.push_back(f);
    v.push_back(-f);
  }
  return v;
}

#if defined(PTRAIN_HALF_F16C)

TEST(HalfF16c, InstructionsMatchThePortableCodeOnEveryHalf) {
  if (!half_detail::cpu_has_f16c()) GTEST_SKIP() << "this CPU has no F16C";
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half = static_cast<uint16_t>(h);
    ASSERT_EQ(bits(half_detail::half_to_float_f16c(half)), bits(half_to_float(half))) << std::hex << h;
    const float f = half_to_float(half);
    ASSERT_EQ(half_detail::float_to_half_f16c(f), float_to_half(f)) << std::hex << h;
  }
}

TEST(HalfF16c, InstructionsMatchThePortableCodeOnManyFloats) {
  if (!half_detail::cpu_has_f16c()) GTEST_SKIP() << "this CPU has no F16C";
  for (const float f : interesting_floats())
    ASSERT_EQ(half_detail::float_to_half_f16c(f), float_to_half(f)) << std::hex << bits(f);
  // And a stride through all 2^32 bit patterns.
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) {
    const float f = from_bits(static_cast<uint32_t>(b));
    ASSERT_EQ(half_detail::float_to_half_f16c(f), float_to_half(f)) << std::hex << b;
  }
}

TEST(HalfF16c, SpanFunctionsMatchThePortableLoops) {
  if (!half_detail::cpu_has_f16c()) GTEST_SKIP() << "this CPU has no F16C";
  const std::vector<float> floats = interesting_floats();
  // Lengths that leave a tail after the groups of eight.
  for (size_t n : {floats.size(), floats.size() - 3, size_t{5}, size_t{0}}) {
    const std::span<const float> in(floats.data(), n);
    std::vector<uint16_t> fast(n), slow(n);
    const uint64_t fast_saturated = half_detail::to_halves_saturating_f16c(in, fast);
    const uint64_t slow_saturated = half_detail::to_halves_saturating_scalar(in, slow);
    ASSERT_EQ(fast, slow);
    ASSERT_EQ(fast_saturated, slow_saturated);
    ASSERT_TRUE(n < 100 || slow_saturated > 0);  // the saturating lanes were exercised
  }
  std::vector<uint16_t> halves(65536 + 5);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i * 40503u);
  std::vector<float> fast(halves.size()), slow(halves.size());
  half_detail::to_floats_f16c(halves, fast);
  half_detail::to_floats_scalar(halves, slow);
  for (size_t i = 0; i < halves.size(); ++i) ASSERT_EQ(bits(fast[i]), bits(slow[i])) << i;
  for (size_t i = 0; i < halves.size(); ++i)  // NaNs on both sides too
    fast[i] = slow[i] = i % 97 == 0 ? from_bits(0xffc01234u) : static_cast<float>(i % 1000) * 0.37f;
  half_detail::add_to_floats_f16c(halves, fast);
  half_detail::add_to_floats_scalar(halves, slow);
  for (size_t i = 0; i < halves.size(); ++i) ASSERT_EQ(bits(fast[i]), bits(slow[i])) << i;
  // Sums of pairs of halves: random ones, and every half against a few fixed ones.
  Rng rng(11);
  std::vector<uint16_t> a, b;
  for (int i = 0; i < (1 << 20); ++i) {
    a.push_back(static_cast<uint16_t>(rng.next()));
    b.push_back(static_cast<uint16_t>(rng.next()));
  }
  for (uint16_t fixed : {uint16_t{0x0000}, uint16_t{0x8001}, uint16_t{0x3c00}, uint16_t{0x7bff},
                         uint16_t{0xfbff}, uint16_t{0x7c00}, uint16_t{0x6400}})
    for (uint32_t h = 0; h < 65536; ++h) {
      a.push_back(static_cast<uint16_t>(h));
      b.push_back(fixed);
    }
  std::vector<uint16_t> fast_sum = a, slow_sum = a;
  half_detail::add_halves_f16c(fast_sum, b);
  half_detail::add_halves_scalar(slow_sum, b);
  ASSERT_EQ(fast_sum, slow_sum);
}

#endif

// Large messages' halves go out with non-temporal stores where the bytes are
// aligned: the same bytes and count as the portable loop, every tail length.
TEST(Half, BytesBypassingTheCacheHoldTheSameHalves) {
  const std::vector<float> floats = interesting_floats();
  std::vector<std::byte> buffer(2 * floats.size() + 32);
  std::byte* const out = buffer.data() + (16 - reinterpret_cast<uintptr_t>(buffer.data()) % 16) % 16;
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{17}, floats.size() - 3,
                   floats.size()}) {
    const std::span<const float> in(floats.data(), n);
    std::vector<uint16_t> expected(n);
    const uint64_t expected_saturated = half_detail::to_halves_saturating_scalar(in, expected);
    std::fill(buffer.begin(), buffer.end(), std::byte{0xAB});
    const std::optional<uint64_t> saturated = floats_to_half_bytes_bypassing_cache(in, out);
    finish_bypassing_copies();
    if (!saturated) {
      EXPECT_FALSE(half_detail::cpu_has_f16c()) << "F16C and aligned bytes, but no streaming conversion";
      continue;
    }
    EXPECT_EQ(*saturated, expected_saturated) << n;
    ASSERT_TRUE(n == 0 || std::memcmp(out, expected.data(), 2 * n) == 0) << n;
    EXPECT_EQ(out[2 * n], std::byte{0xAB}) << "wrote past the end, n " << n;
    EXPECT_TRUE(n < 100 || expected_saturated > 0);  // the saturating lanes were exercised
  }
  // Bytes not 16-byte aligned: declined, for the caller's other path.
  EXPECT_FALSE(floats_to_half_bytes_bypassing_cache(std::span<const float>(floats.data(), 9), out + 2));
}

TEST(Half, SpanFunctionsConvertAndAdd) {
  const std::vector<float> in = {1.0f, -2.5f, 70000.0f, 0.1f, -1e9f, 3.0f, 0.0f, 65504.0f, 7.0f};
  std::vector<uint16_t> halves(in.size());
  EXPECT_EQ(floats_to_halves_saturating(in, halves), 2u);
  for (size_t i = 0; i < in.size(); ++i) {
    uint64_t ignored = 0;
    EXPECT_EQ(halves[i], float_to_half_saturating(in[i], ignored)) << i;
  }
  std::vector<float> back(in.size());
  halves_to_floats(halves, back);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(back[i], half_to_float(halves[i])) << i;
  std::vector<float> sum(in.size(), 1.0f);
  add_halves_to_floats(halves, sum);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(sum[i], 1.0f + half_to_float(halves[i])) << i;
  std::vector<uint16_t> twice = halves;
  add_halves(twice, halves);
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(twice[i], add_halves_saturating(halves[i], halves[i])) << i;
}

}  // namespace
}  // namespace ptrain
