#pragma once
// The int8 codec's loops over one chunk (int8_codec.hpp defines what they
// compute): the chunk's largest magnitude, quantization with round to
// nearest, and the decoder's multiply-add. Each exists as a portable loop and,
// on x86-64, as an AVX2 kernel picked at run time (as core/half.hpp does for
// F16C); both give the same bits, which the tests check.
//
// A large message (int8_codec.cpp decides) is written with non-temporal
// stores: they skip reading each destination line before writing it.
//
// Rounding without a division per element: y = x * (1 / scale) in float is
// within 2^-15 of x / scale (|x / scale| <= 127.5), so where y is not within
// 2^-13 of a half-integer, round(y) is round(x / scale). The rare lanes that
// are (exact ties among them) take the portable expression, in double.
#include <cstddef>
#include <cstdint>
#include <span>

namespace ptrain::int8_kernels {

struct ChunkRange {
  float max_abs = 0;
  bool finite = true;
};

// q rounded already, clamped to [-127, 127], as a two's complement byte.
std::byte clamp_to_byte(double q);

// Largest |x| (max_abs, meaningful when finite) and whether every element is finite.
ChunkRange chunk_range_portable(std::span<const float> x);
// q[i] = x[i] / scale rounded to nearest, ties to even, clamped to [-127, 127]
// (two's complement bytes). scale > 0 and max|x| / scale <= 127.5.
void quantize_nearest_portable(std::span<const float> x, float scale, std::byte* q);
// out[i] += q[i] * scale (q as int8).
void dequantize_add_portable(const std::byte* q, float scale, std::span<float> out);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PTRAIN_INT8_AVX2 1
ChunkRange chunk_range_avx2(std::span<const float> x);
// bypass: q is not read again soon (a large message): non-temporal stores
// where q is 32-byte aligned; call finish_bypassing_copies()
// (core/streaming_copy.hpp) before another thread reads it.
void quantize_nearest_avx2(std::span<const float> x, float scale, std::byte* q, bool bypass = false);
void dequantize_add_avx2(const std::byte* q, float scale, std::span<float> out);
#endif

// True when the AVX2 kernels run: the CPU has AVX2 and no test asked for the portable ones.
bool use_avx2();
// For tests: run the portable loops even where AVX2 exists.
void set_portable(bool portable);

inline ChunkRange chunk_range(std::span<const float> x) {
#if defined(PTRAIN_INT8_AVX2)
  if (use_avx2()) return chunk_range_avx2(x);
#endif
  return chunk_range_portable(x);
}
inline void quantize_nearest(std::span<const float> x, float scale, std::byte* q, bool bypass = false) {
#if defined(PTRAIN_INT8_AVX2)
  if (use_avx2()) return quantize_nearest_avx2(x, scale, q, bypass);
#endif
  quantize_nearest_portable(x, scale, q);
}
inline void dequantize_add(const std::byte* q, float scale, std::span<float> out) {
#if defined(PTRAIN_INT8_AVX2)
  if (use_avx2()) return dequantize_add_avx2(q, scale, out);
#endif
  dequantize_add_portable(q, scale, out);
}

}  // namespace ptrain::int8_kernels
