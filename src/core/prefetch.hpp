#pragma once
// Software prefetch a fixed distance ahead of a streaming loop. The hardware
// prefetcher stops at page boundaries, and the codecs' loops run over blocks
// of a page or two, so each block would start with cache misses.
//
// The address is computed as an integer: it may lie past the end of the
// caller's array (no pointer is formed beyond it), and a prefetch never faults.
#include <cstddef>
#include <cstdint>

namespace ptrain {

inline constexpr size_t kPrefetchBytes = 4096;  // one page ahead

// Asks for the cache line `bytes` past p: for reading, or (write) for writing.
template <bool kWrite = false>
inline void prefetch_ahead(const void* p, size_t bytes = kPrefetchBytes) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + bytes), kWrite ? 1 : 0);
}

}  // namespace ptrain
