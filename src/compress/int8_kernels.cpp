#include "compress/int8_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>

#include "core/cpu_features.hpp"
#include "core/prefetch.hpp"

#if defined(PTRAIN_INT8_AVX2)
#include <immintrin.h>
#endif

namespace ptrain::int8_kernels {

namespace {

std::atomic<bool> force_portable{false};

// Round to nearest, ties to even, for |y| < 2^51: adding 1.5 * 2^52 leaves no
// fraction bits in the double. (A plain expression: no library call.)
double round_nearest(double y) { return (y + 0x1.8p52) - 0x1.8p52; }

}  // namespace

std::byte clamp_to_byte(double q) {
  const double clamped = std::clamp(q, -127.0, 127.0);
  return static_cast<std::byte>(static_cast<uint8_t>(static_cast<int8_t>(clamped)));
}

ChunkRange chunk_range_portable(std::span<const float> x) {
  ChunkRange r;
  for (const float v : x) {
    const float a = std::fabs(v);
    r.finite &= a <= std::numeric_limits<float>::max();  // false for inf and NaN
    r.max_abs = a > r.max_abs ? a : r.max_abs;
  }
  return r;
}

void quantize_nearest_portable(std::span<const float> x, float scale, std::byte* q) {
  // x / scale in double is correctly rounded, so the rounding below decides
  // as exact arithmetic would: the error bounds hold exactly, ties included.
  const auto s = static_cast<double>(scale);
  for (size_t i = 0; i < x.size(); ++i) q[i] = clamp_to_byte(round_nearest(static_cast<double>(x[i]) / s));
}

void dequantize_add_portable(const std::byte* q, float scale, std::span<float> out) {
  for (size_t i = 0; i < out.size(); ++i)
    out[i] += static_cast<float>(static_cast<int8_t>(std::to_integer<uint8_t>(q[i]))) * scale;
}

#if defined(PTRAIN_INT8_AVX2)

// Keys (the bits without the sign) order finite magnitudes as the floats do;
// inf and NaN have keys from 0x7f800000 up.
[[gnu::target("avx2")]] ChunkRange chunk_range_avx2(std::span<const float> x) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i top = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 16 <= x.size(); i += 16) {
    // The first pass over the chunk (a default chunk is one page): the next page's lines ahead of time.
    prefetch_ahead(x.data() + i);
    for (size_t j = 0; j < 16; j += 8)
      top = _mm256_max_epi32(top,  // keys < 2^31: signed max
                             _mm256_and_si256(
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.data() + i + j)), abs_mask));
  }
  for (; i + 8 <= x.size(); i += 8)
    top = _mm256_max_epi32(top, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.data() + i)),
                                                 abs_mask));
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), top);
  uint32_t key = 0;
  for (const uint32_t k : lanes) key = std::max(key, k);
  for (; i < x.size(); ++i) key = std::max(key, std::bit_cast<uint32_t>(x[i]) & 0x7fffffffu);
  if (key >= 0x7f800000u) return {.max_abs = 0, .finite = false};
  return {.max_abs = std::bit_cast<float>(key), .finite = true};
}

// 32 values a round: four vectors of y = x / scale estimated, rounded, checked
// for near-ties (|y - round(y)| within 2^-13 of 1/2: the fraction of y within
// 2^-13 of 1/2), clamped and packed into one 32-byte store, non-temporal when
// `bypass` and q is aligned.
template <bool kStream>
[[gnu::target("avx2")]] void quantize_nearest_avx2_loop(std::span<const float> x, float scale, std::byte* q) {
  const float reciprocal = 1.0f / scale;
  // Scales below 2^-128 have no finite float reciprocal: the portable loop takes them.
  if (!(reciprocal <= std::numeric_limits<float>::max())) return quantize_nearest_portable(x, scale, q);
  const __m256 r = _mm256_set1_ps(reciprocal);
  const __m256 near = _mm256_set1_ps(0.5f - 0x1p-13f), abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  size_t i = 0;
  for (; i + 32 <= x.size(); i += 32) {
    // The next chunk's lines, while this one is worked on from the first-level cache.
    prefetch_ahead(x.data() + i, 2 * kPrefetchBytes);
    prefetch_ahead(x.data() + i + 16, 2 * kPrefetchBytes);
    __m256 rounded[4];
    __m256 tie = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      const __m256 y = _mm256_mul_ps(_mm256_loadu_ps(x.data() + i + 8 * j), r);
      rounded[j] = _mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m256 distance = _mm256_and_ps(_mm256_sub_ps(y, rounded[j]), abs_mask);  // exact for |y| < 2^23
      tie = _mm256_or_ps(tie, _mm256_cmp_ps(distance, near, _CMP_GE_OQ));
    }
    if (_mm256_movemask_ps(tie) != 0) {
      quantize_nearest_portable(x.subspan(i, 32), scale, q + i);
      continue;
    }
    __m256i n[4];
    for (int j = 0; j < 4; ++j) n[j] = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(rounded[j], lo), hi));
    const __m256i bytes = _mm256_permutevar8x32_epi32(
        _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3])), order);
    if constexpr (kStream)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(q + i), bytes);
    else
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), bytes);
  }
  quantize_nearest_portable(x.subspan(i), scale, q + i);
}

void quantize_nearest_avx2(std::span<const float> x, float scale, std::byte* q, bool bypass) {
  if (bypass && reinterpret_cast<uintptr_t>(q) % 32 == 0) return quantize_nearest_avx2_loop<true>(x, scale, q);
  quantize_nearest_avx2_loop<false>(x, scale, q);
}

// No FMA in the target: q * scale and the addition round separately, as in the portable loop.
[[gnu::target("avx2")]] void dequantize_add_avx2(const std::byte* q, float scale, std::span<float> out) {
  const __m256 s = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    if (i % 16 == 0) prefetch_ahead<true>(out.data() + i);
    const __m256 value =
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i))));
    _mm256_storeu_ps(out.data() + i, _mm256_add_ps(_mm256_loadu_ps(out.data() + i), _mm256_mul_ps(value, s)));
  }
  dequantize_add_portable(q + i, scale, out.subspan(i));
}

#endif

bool use_avx2() {
#if defined(PTRAIN_INT8_AVX2)
  return cpu_has_avx2() && !force_portable.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void set_portable(bool portable) { force_portable.store(portable, std::memory_order_relaxed); }

}  // namespace ptrain::int8_kernels
