// The int8 codec's AVX2 kernels against the portable loops, bit for bit:
// ties (exact and near), saturation at +-127.5 scales, signed zeros,
// subnormals, tiny scales without a float reciprocal, inf and NaN, and
// lengths that leave tails of every size.
#include "compress/int8_kernels.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "compress/codec_registry.hpp"
#include "compress/int8_codec.hpp"
#include "core/rng.hpp"
#include "core/streaming_copy.hpp"

namespace ptrain {
namespace {

using namespace int8_kernels;

// A chunk of n values exercising the hard cases, scaled so max|x| = 127.5 * scale at most.
std::vector<float> hard_chunk(size_t n, float scale, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    const float u = rng.uniform() * 2.0f - 1.0f;
    switch (i % 6) {
      case 0: x[i] = u * 127.0f * scale; break;                                          // ordinary
      case 1: x[i] = (std::floor(u * 127.0f) + 0.5f) * scale; break;                     // exact ties
      case 2: x[i] = std::nextafter((std::floor(u * 120.0f) + 0.5f) * scale, 0.0f); break;  // just off a tie
      case 3: x[i] = (i % 12 == 3 ? 127.5f : -127.5f) * scale; break;                   // the clamp
      case 4: x[i] = i % 24 == 4 ? -0.0f : 0.0f; break;
      default: x[i] = u * scale * 1e-3f; break;                                           // rounds to 0
    }
  }
  return x;
}

void expect_same_quantization(const std::vector<float>& x, float scale, const std::string& what) {
  std::vector<std::byte> portable(x.size()), avx2(x.size());
  quantize_nearest_portable(x, scale, portable.data());
  quantize_nearest(x, scale, avx2.data());
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(portable[i], avx2[i]) << what << " element " << i << " x " << x[i] << " scale " << scale;
}

TEST(Int8Kernels, QuantizationMatchesThePortableLoopBitForBit) {
  if (!use_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: only the portable loop runs";
  for (const float scale : {1.0f, 0.0137f, 3.7e-30f, 1e-38f, 0x1p-127f, 0x1p-140f, 2.5e30f}) {
    for (const size_t n : {0, 1, 7, 8, 31, 32, 33, 63, 100, 1024, 1031}) {
      const auto x = hard_chunk(n, scale, 11 + n);
      expect_same_quantization(x, scale, fmt::format("n {}", n));
    }
    // Without ties most blocks of 32 take the vector rounding rather than the fallback.
    Rng rng(5);
    std::vector<float> ordinary(100000);
    for (float& v : ordinary) v = (rng.uniform() * 2.0f - 1.0f) * 127.5f * scale;
    expect_same_quantization(ordinary, scale, "uniform");
  }
}

// Large messages' bytes go out with non-temporal stores where aligned: the
// same bytes as the portable loop, and nothing written past the chunk.
TEST(Int8Kernels, QuantizationBypassingTheCacheMatchesThePortableLoop) {
  if (!use_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: only the portable loop runs";
  for (const float scale : {1.0f, 0.0137f, 0x1p-140f}) {
    for (const size_t n : {0, 1, 31, 32, 33, 100, 1024, 1031}) {
      const auto x = hard_chunk(n, scale, 21 + n);
      std::vector<std::byte> portable(n), buffer(n + 64, std::byte{0x5A});
      for (const size_t offset : {size_t{0}, size_t{3}}) {  // aligned, then not
        std::byte* const q = buffer.data() + (32 - reinterpret_cast<uintptr_t>(buffer.data()) % 32) % 32 + offset;
        quantize_nearest_portable(x, scale, portable.data());
        quantize_nearest(x, scale, q, true);
        finish_bypassing_copies();
        ASSERT_TRUE(n == 0 || std::memcmp(portable.data(), q, n) == 0) << "n " << n << " scale " << scale << " offset " << offset;
        ASSERT_EQ(q[n], std::byte{0x5A}) << "wrote past the chunk, n " << n;
      }
    }
  }
}

TEST(Int8Kernels, ChunkRangeMatchesThePortableLoop) {
  if (!use_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: only the portable loop runs";
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const size_t n : {1, 7, 8, 9, 64, 1023}) {
    for (const float odd : {0.0f, -3.0f, 1e-45f, -inf, inf, nan, -nan}) {
      for (const size_t at : {size_t{0}, n / 2, n - 1}) {
        auto x = hard_chunk(n, 0.01f, n);
        x[at] = odd;
        const ChunkRange a = chunk_range_portable(x), b = chunk_range(x);
        ASSERT_EQ(a.finite, b.finite) << "n " << n << " value " << odd << " at " << at;
        if (a.finite) {
          ASSERT_EQ(std::bit_cast<uint32_t>(a.max_abs), std::bit_cast<uint32_t>(b.max_abs))
              << "n " << n << " value " << odd << " at " << at;
        }
      }
    }
  }
}

TEST(Int8Kernels, DequantizeAddMatchesThePortableLoopBitForBit) {
  if (!use_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: only the portable loop runs";
  Rng rng(3);
  for (const float scale : {0.0137f, 1e-40f, 3e36f, std::numeric_limits<float>::quiet_NaN()}) {
    for (const size_t n : {0, 1, 7, 8, 9, 1024, 1031}) {
      std::vector<std::byte> q(n);
      std::vector<float> a(n), b(n);
      for (size_t i = 0; i < n; ++i) {
        q[i] = static_cast<std::byte>(rng.next() & 0xff);
        a[i] = b[i] = (rng.uniform() - 0.5f) * 1e3f;
      }
      dequantize_add_portable(q.data(), scale, a);
      dequantize_add(q.data(), scale, b);
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i]))
            << "n " << n << " scale " << scale << " element " << i;
    }
  }
}

// The whole codec, both ways, over chunks with every kind of content.
TEST(Int8Kernels, CodecOutputIsTheSameWithEitherKernel) {
  const size_t n = 5 * 1024 + 77;
  std::vector<float> grad = hard_chunk(n, 0.02f, 9);
  grad[1500] = std::numeric_limits<float>::infinity();     // a non-finite chunk
  std::fill(grad.begin() + 2048, grad.begin() + 3072, 0.0f);  // a zero chunk
  grad[4000] = 1e-42f;                                      // a chunk with a subnormal scale
  for (size_t i = 3072; i < 4096; ++i) grad[i] = grad[i] * 1e-40f;
  Int8Options options;
  CodecRange range;
  range.count = n;
  set_portable(true);
  const Encoded portable = Int8Codec(options, range, 1).encode(grad, {});
  std::vector<float> decoded_portable(n, 1.0f);
  Int8Codec(options, range, 1).decode_add(portable, decoded_portable);
  set_portable(false);
  const Encoded fast = Int8Codec(options, range, 1).encode(grad, {});
  std::vector<float> decoded_fast(n, 1.0f);
  Int8Codec(options, range, 1).decode_add(fast, decoded_fast);
  EXPECT_EQ(portable.bytes, fast.bytes);
  EXPECT_EQ(0, std::memcmp(decoded_portable.data(), decoded_fast.data(), n * sizeof(float)));
}

// A message of 8 MiB and more is written past the caches: the same bytes.
TEST(Int8Kernels, LargeMessagesAreTheSameWithEitherKernel) {
  const size_t n = (size_t{9} << 20) + 77;
  std::vector<float> grad = hard_chunk(n, 0.02f, 10);
  std::fill(grad.begin() + 4096, grad.begin() + 5120, 0.0f);  // a zero chunk between streamed ones
  Int8Options options;
  CodecRange range;
  range.count = n;
  set_portable(true);
  const Encoded portable = Int8Codec(options, range, 1).encode(grad, {});
  set_portable(false);
  Encoded fast;
  fast.bytes.assign(Int8Codec::encoded_size(n, options.chunk), std::byte{0xAB});  // a previous step's bytes
  Int8Codec(options, range, 1).encode_into(grad, {}, fast);
  EXPECT_EQ(portable.bytes, fast.bytes);
}

}  // namespace
}  // namespace ptrain
