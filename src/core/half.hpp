#pragma once
// IEEE-754 binary16 ("half") conversions, for the fp16 codec and the
// all-reduce of halves.
//
// The scalar functions are portable and bit-exact: float -> half rounds to
// nearest, ties to even, keeps +-0, subnormals and infinities, and turns a NaN
// into a quiet NaN with the same sign and the top 10 bits of its payload (as
// x86's F16C instructions do); half -> float is exact, and quiets a signalling
// NaN likewise. The span functions do the same, on x86-64 with F16C (checked
// at run time) eight at a time; both paths give the same bits.
//
// Saturating conversion: a finite float whose nearest half would be infinite
// (|x| >= 65520) becomes +-65504, the largest finite half, and is counted.
// Values in (65504, 65520) round to 65504 anyway and are not counted: nothing
// beyond ordinary rounding is lost on them. Infinities and NaNs stay what they are.
//
// Additions (for all-reduces and decoding) are done in fp32; a sum that is
// NaN comes out as one canonical quiet NaN, whatever the operands' payloads.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>

#include "core/prefetch.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define PTRAIN_HALF_F16C 1
#endif

namespace ptrain {

inline constexpr uint16_t kHalfMax = 0x7bff;       // 65504
inline constexpr uint16_t kHalfInfinity = 0x7c00;  // +inf
inline constexpr float kHalfMaxValue = 65504.0f;

// A half's class from its bits: exponent all ones is infinite or NaN, a NaN with a nonzero fraction.
constexpr bool half_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
constexpr bool half_is_finite(uint16_t h) { return (h & 0x7c00) != 0x7c00; }

// Float -> half, round to nearest even; beyond the half range becomes +-inf.
constexpr uint16_t float_to_half(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) {  // inf or NaN
    if (a == 0x7f800000u) return static_cast<uint16_t>(sign | kHalfInfinity);
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | kHalfInfinity);  // >= 65520 rounds to inf
  if (a >= 0x38800000u) {                                                    // >= 2^-14: a normal half
    // Rebias the exponent (127 -> 15), then round off the low 13 mantissa bits,
    // ties to even; a carry out of the mantissa bumps the exponent, as it should.
    const uint32_t m = a - 0x38000000u;
    return static_cast<uint16_t>(sign | ((m + 0x0fffu + ((m >> 13) & 1u)) >> 13));
  }
  if (a <= 0x33000000u) return sign;  // <= 2^-25: ties to the even zero
  // A subnormal half: units of 2^-24. The float is mantissa * 2^(e - 150).
  const uint32_t e = a >> 23;
  const uint32_t mantissa = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14 .. 24
  uint32_t q = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1), half_unit = 1u << (shift - 1);
  if (rest > half_unit || (rest == half_unit && (q & 1u))) ++q;  // may carry into the smallest normal
  return static_cast<uint16_t>(sign | q);
}

// True when `value` is finite but its nearest half is infinite.
constexpr bool half_saturates(float value) {
  const uint32_t a = std::bit_cast<uint32_t>(value) & 0x7fffffffu;
  return a >= 0x477ff000u && a < 0x7f800000u;
}

// Float -> half, round to nearest even; a finite value beyond the half range
// becomes +-65504 and adds one to `saturated`.
constexpr uint16_t float_to_half_saturating(float value, uint64_t& saturated) {
  if (half_saturates(value)) {
    ++saturated;
    return static_cast<uint16_t>(((std::bit_cast<uint32_t>(value) >> 16) & 0x8000u) | kHalfMax);
  }
  return float_to_half(value);
}

// Half -> float, exact (a signalling NaN comes back quiet).
constexpr float half_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t e = (half >> 10) & 0x1fu, m = half & 0x3ffu;
  if (e == 0x1f)  // inf or NaN
    return std::bit_cast<float>(sign | 0x7f800000u | (m << 13) | (m != 0 ? 0x400000u : 0u));
  if (e != 0) return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
  // Zero or subnormal: m * 2^-24, exact in a float.
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(static_cast<float>(m) * 0x1p-24f));
}

// The quiet NaNs that sums of NaNs become (below): which operand's payload an
// addition of two NaNs keeps is up to the compiler and the instruction set, so
// sums keep none, and their bits do not depend on the order of the operands.
inline constexpr uint16_t kHalfNaN = 0x7e00;
inline constexpr uint32_t kFloatNaNBits = 0x7fc00000;

// a + b in fp32; a NaN sum is the quiet NaN of kFloatNaNBits.
constexpr float add_floats_canonical(float a, float b) {
  const float sum = a + b;
  return sum != sum ? std::bit_cast<float>(kFloatNaNBits) : sum;
}

// The sum of two halves, added in fp32 and rounded once to half (which is the
// correctly rounded half sum: fp32 holds more than twice half's precision),
// saturating to +-65504 instead of overflowing to inf. inf + x is inf; a NaN
// sum (a NaN operand, inf - inf) is kHalfNaN.
constexpr uint16_t add_halves_saturating(uint16_t a, uint16_t b) {
  uint64_t ignored = 0;
  return float_to_half_saturating(add_floats_canonical(half_to_float(a), half_to_float(b)), ignored);
}

// ---- Spans: the portable loops, the F16C ones, and the dispatch between them.

namespace half_detail {

inline uint64_t to_halves_saturating_scalar(std::span<const float> in, std::span<uint16_t> out) {
  uint64_t saturated = 0;
  for (size_t i = 0; i < in.size(); ++i) out[i] = float_to_half_saturating(in[i], saturated);
  return saturated;
}
inline void to_floats_scalar(std::span<const uint16_t> in, std::span<float> out) {
  for (size_t i = 0; i < in.size(); ++i) out[i] = half_to_float(in[i]);
}
inline void add_to_floats_scalar(std::span<const uint16_t> in, std::span<float> out) {
  for (size_t i = 0; i < in.size(); ++i) out[i] = add_floats_canonical(out[i], half_to_float(in[i]));
}
inline void add_halves_scalar(std::span<uint16_t> target, std::span<const uint16_t> addend) {
  for (size_t i = 0; i < target.size(); ++i) target[i] = add_halves_saturating(target[i], addend[i]);
}

#if defined(PTRAIN_HALF_F16C)

inline bool cpu_has_f16c() {
  static const bool supported = [] {
    __builtin_cpu_init();
    // F16C from CPUID leaf 1 itself: clang 14's __builtin_cpu_supports does not know "f16c".
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  }();
  return supported;
}

// One value each way, with the instructions themselves (for the tests).
[[gnu::target("f16c")]] inline uint16_t float_to_half_f16c(float value) {
  return static_cast<uint16_t>(_cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT));
}
[[gnu::target("f16c")]] inline float half_to_float_f16c(uint16_t half) { return _cvtsh_ss(half); }

// Replaces finite lanes beyond the half range by +-65504 and returns how many there were.
[[gnu::target("avx,f16c")]] inline __m256 saturate8(__m256 x, uint64_t& saturated) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 magnitude = _mm256_andnot_ps(sign_bit, x);
  // Ordered comparisons: false for NaN lanes, which stay NaN.
  const __m256 beyond = _mm256_and_ps(
      _mm256_cmp_ps(magnitude, _mm256_set1_ps(65520.0f), _CMP_GE_OQ),
      _mm256_cmp_ps(magnitude, _mm256_set1_ps(std::numeric_limits<float>::infinity()), _CMP_LT_OQ));
  const int mask = _mm256_movemask_ps(beyond);
  if (mask == 0) return x;
  saturated += static_cast<uint64_t>(std::popcount(static_cast<unsigned>(mask)));
  const __m256 clamped = _mm256_or_ps(_mm256_and_ps(sign_bit, x), _mm256_set1_ps(kHalfMaxValue));
  return _mm256_blendv_ps(x, clamped, beyond);
}


[[gnu::target("avx,f16c")]] inline uint64_t to_halves_saturating_f16c(std::span<const float> in,
                                                                      std::span<uint16_t> out) {
  uint64_t saturated = 0;
  size_t i = 0;
  for (; i + 8 <= in.size(); i += 8) {
    if (i % 16 == 0) prefetch_ahead(in.data() + i);
    const __m256 x = saturate8(_mm256_loadu_ps(in.data() + i), saturated);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out.data() + i),
                     _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
  }
  return saturated + to_halves_saturating_scalar(in.subspan(i), out.subspan(i));
}

// As to_halves_saturating_f16c, into 16-byte aligned bytes with non-temporal stores.
[[gnu::target("avx,f16c")]] inline uint64_t to_halves_saturating_streaming_f16c(std::span<const float> in,
                                                                                std::byte* out) {
  uint64_t saturated = 0;
  size_t i = 0;
  for (; i + 8 <= in.size(); i += 8) {
    if (i % 16 == 0) prefetch_ahead(in.data() + i);
    const __m256 x = saturate8(_mm256_loadu_ps(in.data() + i), saturated);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 2 * i), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
  }
  uint16_t tail[8];
  const size_t rest = in.size() - i;
  saturated += to_halves_saturating_scalar(in.subspan(i), {tail, rest});
  std::memcpy(out + 2 * i, tail, rest * sizeof(uint16_t));
  return saturated;
}

// a + b, NaN lanes replaced by kFloatNaNBits.
[[gnu::target("avx,f16c")]] inline __m256 add8_canonical(__m256 a, __m256 b) {
  const __m256 sum = _mm256_add_ps(a, b);
  return _mm256_blendv_ps(sum, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kFloatNaNBits))),
                          _mm256_cmp_ps(sum, sum, _CMP_UNORD_Q));
}

[[gnu::target("avx,f16c")]] inline __m256 load8_halves(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

[[gnu::target("avx,f16c")]] inline void to_floats_f16c(std::span<const uint16_t> in, std::span<float> out) {
  size_t i = 0;
  for (; i + 8 <= in.size(); i += 8) _mm256_storeu_ps(out.data() + i, load8_halves(in.data() + i));
  to_floats_scalar(in.subspan(i), out.subspan(i));
}

[[gnu::target("avx,f16c")]] inline void add_to_floats_f16c(std::span<const uint16_t> in,
                                                           std::span<float> out) {
  size_t i = 0;
  for (; i + 8 <= in.size(); i += 8) {
    if (i % 16 == 0) prefetch_ahead<true>(out.data() + i);
    _mm256_storeu_ps(out.data() + i,
                     add8_canonical(_mm256_loadu_ps(out.data() + i), load8_halves(in.data() + i)));
  }
  add_to_floats_scalar(in.subspan(i), out.subspan(i));
}

[[gnu::target("avx,f16c")]] inline void add_halves_f16c(std::span<uint16_t> target,
                                                        std::span<const uint16_t> addend) {
  uint64_t ignored = 0;
  size_t i = 0;
  for (; i + 8 <= target.size(); i += 8) {
    const __m256 sum = add8_canonical(load8_halves(target.data() + i), load8_halves(addend.data() + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(target.data() + i),
                     _mm256_cvtps_ph(saturate8(sum, ignored), _MM_FROUND_TO_NEAREST_INT));
  }
  add_halves_scalar(target.subspan(i), addend.subspan(i));
}

#else

constexpr bool cpu_has_f16c() { return false; }

#endif

}  // namespace half_detail

// out[i] = half of in[i], saturating; returns how many saturated. out.size() >= in.size().
inline uint64_t floats_to_halves_saturating(std::span<const float> in, std::span<uint16_t> out) {
#if defined(PTRAIN_HALF_F16C)
  if (half_detail::cpu_has_f16c()) return half_detail::to_halves_saturating_f16c(in, out);
#endif
  return half_detail::to_halves_saturating_scalar(in, out);
}

// The same halves as floats_to_halves_saturating, as bytes (little-endian)
// into `out` (2 in.size() bytes), with non-temporal stores where the CPU has
// F16C and `out` is 16-byte aligned: for a large message that is not read
// again soon. Returns how many saturated, or nothing where those stores do not
// apply (the caller converts another way). Call finish_bypassing_copies()
// (core/streaming_copy.hpp) before another thread reads `out`.
inline std::optional<uint64_t> floats_to_half_bytes_bypassing_cache(std::span<const float> in, std::byte* out) {
#if defined(PTRAIN_HALF_F16C)
  if (half_detail::cpu_has_f16c() && reinterpret_cast<uintptr_t>(out) % 16 == 0)
    return half_detail::to_halves_saturating_streaming_f16c(in, out);
#endif
  (void)in, (void)out;
  return std::nullopt;
}

// out[i] = float of in[i]. out.size() >= in.size().
inline void halves_to_floats(std::span<const uint16_t> in, std::span<float> out) {
#if defined(PTRAIN_HALF_F16C)
  if (half_detail::cpu_has_f16c()) return half_detail::to_floats_f16c(in, out);
#endif
  half_detail::to_floats_scalar(in, out);
}

// out[i] = add_floats_canonical(out[i], float of in[i]). out.size() >= in.size().
inline void add_halves_to_floats(std::span<const uint16_t> in, std::span<float> out) {
#if defined(PTRAIN_HALF_F16C)
  if (half_detail::cpu_has_f16c()) return half_detail::add_to_floats_f16c(in, out);
#endif
  half_detail::add_to_floats_scalar(in, out);
}

// target[i] = add_halves_saturating(target[i], addend[i]). addend.size() >= target.size().
inline void add_halves(std::span<uint16_t> target, std::span<const uint16_t> addend) {
#if defined(PTRAIN_HALF_F16C)
  if (half_detail::cpu_has_f16c()) return half_detail::add_halves_f16c(target, addend);
#endif
  half_detail::add_halves_scalar(target, addend);
}

}  // namespace ptrain
