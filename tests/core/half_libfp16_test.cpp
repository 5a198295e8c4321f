// core/half.hpp against Debian's libfp16 (Marat Dukhan's FP16 library), an
// independent implementation of the same IEEE conversions. ptrain keeps its
// own (constexpr, F16C spans, saturation counted, NaN payloads kept as F16C
// keeps them, where libfp16 returns one canonical NaN); here every half and a
// dense sample of floats must convert to the same bits as libfp16's, NaNs
// compared by class and sign.
#include <fp16.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "core/half.hpp"
#include "core/rng.hpp"

namespace ptrain {
namespace {

TEST(HalfAgainstLibfp16, EveryHalfToFloat) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const float ours = half_to_float(half);
    const float theirs = fp16_ieee_to_fp32_value(half);
    if (half_is_nan(half)) {
      ASSERT_TRUE(std::isnan(ours) && std::isnan(theirs)) << std::hex << h;
      ASSERT_EQ(std::signbit(ours), std::signbit(theirs)) << std::hex << h;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(ours), std::bit_cast<uint32_t>(theirs)) << std::hex << h;
    }
  }
}

// Every float whose low 13 bits are a tie, one above or one below it, or
// zero (the cases rounding can get wrong), over every exponent, and random floats besides.
TEST(HalfAgainstLibfp16, FloatsToHalf) {
  auto check = [](uint32_t bits) {
    const float f = std::bit_cast<float>(bits);
    const uint16_t ours = float_to_half(f);
    const uint16_t theirs = fp16_ieee_from_fp32_value(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(half_is_nan(ours) && half_is_nan(theirs)) << std::hex << bits;
      ASSERT_EQ(ours & 0x8000, theirs & 0x8000) << std::hex << bits;
    } else {
      ASSERT_EQ(ours, theirs) << std::hex << bits << " = " << f;
    }
  };
  for (uint32_t high = 0; high < (1u << 19); ++high)
    for (uint32_t low : {0u, 0xfffu, 0x1000u, 0x1001u, 0x1fffu}) check((high << 13) | low);
  Rng rng(2026);
  for (int i = 0; i < 1'000'000; ++i) check(static_cast<uint32_t>(rng.next()));
}

}  // namespace
}  // namespace ptrain
