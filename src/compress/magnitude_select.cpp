#include "compress/magnitude_select.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <limits>

#include "core/cpu_features.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PTRAIN_SPARSE_AVX2_KERNELS 1
#include <immintrin.h>
#endif

namespace ptrain {

namespace {

std::atomic<bool> force_portable{false};

// The radix select's digits, most significant first: keys have 31 bits (the
// sign is cleared), split 11 + 11 + 9.
constexpr int kDigitShift[3] = {20, 9, 0};
constexpr int kDigitBits[3] = {11, 11, 9};
constexpr size_t kMaxBins = 2048;

// Histogram of the first digit over every element. Four sub-histograms, so
// that runs of equal digits (common: gradients span few exponents) do not
// serialise on one counter.
size_t first_digit_histogram(std::span<const float> values, std::span<const IndexSpan> spans,
                             std::array<size_t, kMaxBins>& hist, size_t& zeros) {
  std::array<std::array<uint32_t, kMaxBins>, 4> parts{};
  size_t total = 0, zero_count = 0;
  const float* x = values.data();
  for (const auto& [begin, end] : spans) {
    total += end - begin;
    size_t i = begin;
    for (; i + 4 <= end; i += 4) {
      const uint32_t k0 = magnitude_key(x[i]), k1 = magnitude_key(x[i + 1]), k2 = magnitude_key(x[i + 2]),
                     k3 = magnitude_key(x[i + 3]);
      ++parts[0][k0 >> kDigitShift[0]];
      ++parts[1][k1 >> kDigitShift[0]];
      ++parts[2][k2 >> kDigitShift[0]];
      ++parts[3][k3 >> kDigitShift[0]];
      zero_count += (k0 == 0) + (k1 == 0) + (k2 == 0) + (k3 == 0);
    }
    for (; i < end; ++i) {
      const uint32_t k = magnitude_key(x[i]);
      ++parts[0][k >> kDigitShift[0]];
      zero_count += k == 0;
    }
  }
  for (size_t b = 0; b < kMaxBins; ++b)
    hist[b] = size_t{parts[0][b]} + parts[1][b] + parts[2][b] + parts[3][b];
  zeros = zero_count;
  return total;
}

// Histogram of digit `pass` over the elements whose higher digits are `prefix`.
[[gnu::always_inline]] inline void digit_histogram_scalar(const float* x, size_t begin, size_t end, int pass,
                                                          uint32_t prefix,
                                                          std::array<size_t, kMaxBins>& hist) {
  const int prefix_shift = kDigitShift[pass - 1], shift = kDigitShift[pass];
  const uint32_t mask = (1u << kDigitBits[pass]) - 1;
  for (size_t i = begin; i < end; ++i) {
    const uint32_t k = magnitude_key(x[i]);
    if ((k >> prefix_shift) == prefix) ++hist[(k >> shift) & mask];
  }
}

void digit_histogram_portable(const float* x, std::span<const IndexSpan> spans, int pass, uint32_t prefix,
                              std::array<size_t, kMaxBins>& hist) {
  for (const auto& [begin, end] : spans) digit_histogram_scalar(x, begin, end, pass, prefix, hist);
}

template <typename Push>
[[gnu::always_inline]] inline void cut_scalar(const float* x, size_t begin, size_t end, uint32_t key,
                                              size_t& ties, Push push) {
  for (size_t i = begin; i < end; ++i) {
    const uint32_t k = magnitude_key(x[i]);
    if (k > key) {
      push(i);
    } else if (k == key && ties > 0) {
      --ties;
      push(i);
    }
  }
}

void append_cut_portable(const float* x, std::span<const IndexSpan> spans, uint32_t key, size_t ties,
                         std::vector<uint32_t>& out) {
  for (const auto& [begin, end] : spans)
    cut_scalar(x, begin, end, key, ties, [&](size_t i) { out.push_back(static_cast<uint32_t>(i)); });
}

size_t collect_portable(const float* x, std::span<const IndexSpan> spans, uint32_t min_key, size_t capacity,
                        std::vector<uint32_t>& out) {
  size_t count = 0;
  for (const auto& [begin, end] : spans)
    for (size_t i = begin; i < end; ++i)
      if (magnitude_key(x[i]) >= min_key) {
        if (count < capacity) out.push_back(static_cast<uint32_t>(i));
        ++count;
      }
  return count;
}

#if defined(PTRAIN_SPARSE_AVX2_KERNELS)
// Blocks of 8: one compare finds the (rare) blocks with anything to select;
// only those go element by element. min_key >= 1, so a signed compare with
// min_key - 1 tests key >= min_key (keys are below 2^31).
[[gnu::target("avx2")]] void append_cut_avx2(const float* x, std::span<const IndexSpan> spans, uint32_t key,
                                             size_t ties, std::vector<uint32_t>& out) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i below = _mm256_set1_epi32(static_cast<int>(key) - 1);
  auto push = [&](size_t i) { out.push_back(static_cast<uint32_t>(i)); };
  for (const auto& [begin, end] : spans) {
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
      const __m256i k =
          _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), abs_mask);
      if (_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(k, below))) != 0)
        cut_scalar(x, i, i + 8, key, ties, push);
    }
    cut_scalar(x, i, end, key, ties, push);
  }
}

[[gnu::target("avx2")]] size_t collect_avx2(const float* x, std::span<const IndexSpan> spans,
                                            uint32_t min_key, size_t capacity, std::vector<uint32_t>& out) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i below = _mm256_set1_epi32(static_cast<int>(min_key) - 1);
  size_t count = 0;
  for (const auto& [begin, end] : spans) {
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
      const __m256i k =
          _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), abs_mask);
      auto bits =
          static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(k, below))));
      while (bits != 0) {
        if (count < capacity)
          out.push_back(static_cast<uint32_t>(i + static_cast<size_t>(std::countr_zero(bits))));
        ++count;
        bits &= bits - 1;
      }
    }
    for (; i < end; ++i)
      if (magnitude_key(x[i]) >= min_key) {
        if (count < capacity) out.push_back(static_cast<uint32_t>(i));
        ++count;
      }
  }
  return count;
}

// Few elements share the prefix (the bin where the k-th largest lies), so
// blocks of 8 are tested at once and only the rare hits counted one by one.
[[gnu::target("avx2")]] void digit_histogram_avx2(const float* x, std::span<const IndexSpan> spans, int pass,
                                                  uint32_t prefix, std::array<size_t, kMaxBins>& hist) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i wanted = _mm256_set1_epi32(static_cast<int>(prefix));
  const __m128i prefix_shift = _mm_cvtsi32_si128(kDigitShift[pass - 1]);
  for (const auto& [begin, end] : spans) {
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
      const __m256i k =
          _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), abs_mask);
      const __m256i hit = _mm256_cmpeq_epi32(_mm256_srl_epi32(k, prefix_shift), wanted);
      if (_mm256_movemask_ps(_mm256_castsi256_ps(hit)) != 0)
        digit_histogram_scalar(x, i, i + 8, pass, prefix, hist);
    }
    digit_histogram_scalar(x, i, end, pass, prefix, hist);
  }
}
#endif

}  // namespace

bool sparse_kernels_use_avx2() {
#if defined(PTRAIN_SPARSE_AVX2_KERNELS)
  return cpu_has_avx2() && !force_portable.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void set_sparse_kernels_portable(bool portable) { force_portable.store(portable, std::memory_order_relaxed); }

namespace {

void digit_histogram(const float* x, std::span<const IndexSpan> spans, int pass, uint32_t prefix,
                     std::array<size_t, kMaxBins>& hist) {
  hist.fill(0);
#if defined(PTRAIN_SPARSE_AVX2_KERNELS)
  if (sparse_kernels_use_avx2()) return digit_histogram_avx2(x, spans, pass, prefix, hist);
#endif
  digit_histogram_portable(x, spans, pass, prefix, hist);
}

}  // namespace

MagnitudeCut exact_magnitude_cut(std::span<const float> values, std::span<const IndexSpan> spans, size_t k,
                                 bool skip_zeros) {
  std::array<size_t, kMaxBins> hist;
  size_t zeros = 0;
  const size_t total = first_digit_histogram(values, spans, hist, zeros);
  const size_t eligible = total - (skip_zeros ? zeros : 0);
  if (eligible == 0) return {};
  if (k >= eligible)
    return {.key = skip_zeros ? 1u : 0u, .ties = std::numeric_limits<size_t>::max(), .selected = eligible};
  size_t need = k;  // of the elements whose higher digits are `prefix`
  uint32_t prefix = 0;
  for (int pass = 0; pass < 3; ++pass) {
    if (pass > 0) digit_histogram(values.data(), spans, pass, prefix, hist);
    // Zeros have every digit 0: they sit in bin 0 as long as the prefix is 0.
    if (skip_zeros && prefix == 0) hist[0] -= zeros;
    size_t bin = (size_t{1} << kDigitBits[pass]) - 1;
    while (hist[bin] < need) need -= hist[bin--];
    prefix = (prefix << kDigitBits[pass]) | static_cast<uint32_t>(bin);
  }
  return {.key = prefix, .ties = need, .selected = k};
}

void append_cut_indices(std::span<const float> values, std::span<const IndexSpan> spans,
                        const MagnitudeCut& cut, std::vector<uint32_t>& out) {
  if (cut.selected == 0) return;
#if defined(PTRAIN_SPARSE_AVX2_KERNELS)
  if (cut.key > 0 && sparse_kernels_use_avx2())
    return append_cut_avx2(values.data(), spans, cut.key, cut.ties, out);
#endif
  append_cut_portable(values.data(), spans, cut.key, cut.ties, out);
}

size_t collect_at_least(std::span<const float> values, std::span<const IndexSpan> spans, uint32_t min_key,
                        size_t capacity, std::vector<uint32_t>& out) {
  min_key = std::max(min_key, 1u);
#if defined(PTRAIN_SPARSE_AVX2_KERNELS)
  if (sparse_kernels_use_avx2()) return collect_avx2(values.data(), spans, min_key, capacity, out);
#endif
  return collect_portable(values.data(), spans, min_key, capacity, out);
}

uint32_t kth_largest_key(std::span<uint32_t> keys, size_t rank, std::vector<uint32_t>& scratch) {
  // A rank far above the median (DGC's threshold: the 0.1% largest): a heap
  // of the rank largest seen so far, which most keys pass by with one compare.
  if (rank * 16 <= keys.size()) {
    RunningRank largest(rank, scratch);
    for (const uint32_t key : keys) largest.push(key);
    return largest.value();
  }
  std::nth_element(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(rank - 1), keys.end(),
                   std::greater<>());
  return keys[rank - 1];
}

void select_largest(std::span<const float> values, std::span<const uint32_t> candidates, size_t k,
                    std::vector<uint32_t>& keys, std::vector<uint32_t>& out) {
  out.clear();
  if (k == 0) return;
  if (k >= candidates.size()) {
    out.assign(candidates.begin(), candidates.end());
    return;
  }
  keys.resize(candidates.size());
  for (size_t j = 0; j < candidates.size(); ++j) keys[j] = magnitude_key(values[candidates[j]]);
  std::nth_element(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(k - 1), keys.end(),
                   std::greater<>());
  const uint32_t key = keys[k - 1];
  size_t above = 0;
  for (const uint32_t kk : keys) above += kk > key;
  size_t ties = k - above;
  for (const uint32_t i : candidates) {
    const uint32_t kk = magnitude_key(values[i]);
    if (kk > key) {
      out.push_back(i);
    } else if (kk == key && ties > 0) {
      --ties;
      out.push_back(i);
    }
  }
}

}  // namespace ptrain
