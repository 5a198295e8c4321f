#pragma once
// Copies into a large buffer that will not be read again soon (a codec's
// message of many megabytes), with non-temporal stores where the destination
// allows: they skip reading each destination line before writing it, a third
// of the memory traffic of an ordinary copy. Same bytes as std::memcpy.
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PTRAIN_STREAMING_COPY 1
#endif

namespace ptrain {

// dst[0, bytes) = src[0, bytes). Call finish_bypassing_copies() before another
// thread may read dst: non-temporal stores are not ordered by locks or atomics.
inline void copy_bypassing_cache(std::byte* dst, const void* src, size_t bytes) {
#if defined(PTRAIN_STREAMING_COPY)
  size_t i = 0;
  if (reinterpret_cast<uintptr_t>(dst) % 16 == 0) {  // SSE2, in every x86-64
    const auto* from = static_cast<const unsigned char*>(src);
    for (; i + 16 <= bytes; i += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i)));
  }
  std::memcpy(dst + i, static_cast<const unsigned char*>(src) + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

inline void finish_bypassing_copies() {
#if defined(PTRAIN_STREAMING_COPY)
  _mm_sfence();
#endif
}

}  // namespace ptrain
