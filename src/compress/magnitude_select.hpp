#pragma once
// Choosing the largest magnitudes of a gradient, for the sparse codecs.
//
// Magnitudes are compared as keys: a float's bits without its sign. For
// numbers the keys order as |x| does; a NaN ranks above infinity, so a NaN
// gradient is sent (and seen) rather than hidden in a residual. Integer keys
// also give std::nth_element the strict weak order that NaN floats would break.
//
// On x86-64 the scanning kernels are compiled a second time for AVX2 and
// picked at run time; both compilations select the same elements.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "compress/sparse_format.hpp"

namespace ptrain {

inline uint32_t magnitude_key(float x) { return std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu; }

// A selection by magnitude: every element whose key is above `key`, and the
// first `ties` (lowest indices) whose key equals it.
struct MagnitudeCut {
  uint32_t key = 0;
  size_t ties = 0;
  size_t selected = 0;  // elements it selects in all
};

// The cut that selects exactly the k largest magnitudes among the elements of
// `spans` (indices into `values`), ties going to the lowest indices; zeros are
// never selected when `skip_zeros`. Fewer than k eligible: all of them. A
// radix select: three histogram passes over the data, no allocation.
MagnitudeCut exact_magnitude_cut(std::span<const float> values, std::span<const IndexSpan> spans, size_t k,
                                 bool skip_zeros);

// Appends the indices `cut` selects from `spans`, ascending.
void append_cut_indices(std::span<const float> values, std::span<const IndexSpan> spans,
                        const MagnitudeCut& cut, std::vector<uint32_t>& out);

// Counts the elements of `spans` whose key is at least `min_key` (>= 1) and
// appends the first `capacity` of their indices to `out`, ascending. One pass.
size_t collect_at_least(std::span<const float> values, std::span<const IndexSpan> spans, uint32_t min_key,
                        size_t capacity, std::vector<uint32_t>& out);

// The rank-th largest of the keys pushed so far (0 while fewer than rank): a
// lower bound of the rank-th largest of any set that holds them. A heap of the
// rank largest (in `heap`, cleared first), which most keys pass by with one
// compare once it is full.
class RunningRank {
 public:
  RunningRank(size_t rank, std::vector<uint32_t>& heap) : rank_(rank), heap_(heap) { heap_.clear(); }
  void push(uint32_t key) {
    if (heap_.size() < rank_) {
      heap_.push_back(key);
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());  // smallest on top
    } else if (key > heap_.front()) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      heap_.back() = key;
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
    }
  }
  uint32_t value() const { return heap_.size() < rank_ ? 0 : heap_.front(); }

 private:
  size_t rank_;
  std::vector<uint32_t>& heap_;
};

// The rank-th largest of `keys` (1 <= rank <= keys.size()); may reorder them.
// `scratch` is reused between calls.
uint32_t kth_largest_key(std::span<uint32_t> keys, size_t rank, std::vector<uint32_t>& scratch);

// The k largest magnitudes among `candidates` (ascending indices into
// `values`), ties to the lowest indices, into `out` (ascending). `keys` is
// scratch. k <= candidates.size().
void select_largest(std::span<const float> values, std::span<const uint32_t> candidates, size_t k,
                    std::vector<uint32_t>& keys, std::vector<uint32_t>& out);

// True when the AVX2 compilation of the sparse kernels runs: the CPU has AVX2
// and no test asked for the portable one.
bool sparse_kernels_use_avx2();
// For tests: run the portable compilation even where AVX2 exists.
void set_sparse_kernels_portable(bool portable);

}  // namespace ptrain
