#pragma once
// The wire form that the sparse codecs (top-k, DGC) share.
//
// A message carries a fixed number k of (index, value) pairs, so that every
// worker's message for a step has the same size, known in advance from the
// range, the configuration and the step: the all-gather needs no extra round
// to agree on sizes. A codec that selects fewer than k elements pads with
// pairs (0, 0.0f), which add nothing when scattered.
//
// Layout (little-endian, packed, no alignment padding; D and k as below):
//
//   offset          size   field
//   0               4      uint32 D: floats sent dense (DGC's 1-D tensors; 0 for top-k)
//   4               4      uint32 k: pairs that follow the dense part
//   8               4 D    float dense[D]: the values of the dense spans, in range order
//   8 + 4 D         8 k    pairs: uint32 index (within the range), float value
//
// so a message is 8 + 4 D + 8 k bytes. Indices are relative to the codec's
// range and point outside the dense spans. The selected elements' pairs come
// first, in ascending index order (the decoder's scatter-add then walks memory
// forwards); padding pairs (0, 0.0f) fill the remaining slots. A range holds
// at most 2^32 - 1 elements.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "compress/codec.hpp"

namespace ptrain {

static_assert(std::endian::native == std::endian::little, "the sparse wire format is little-endian");

// [begin, end) within a codec's range.
using IndexSpan = std::pair<size_t, size_t>;

inline constexpr size_t kSparseHeaderBytes = 8;
inline constexpr size_t kSparsePairBytes = 8;

// Which parts of a range go dense and which the selection chooses from.
class SparseLayout {
 public:
  // `dense`: ascending, disjoint, within [0, count); empty spans are dropped.
  // Throws ptrain::Error naming `codec` when they are not, or when the range
  // does not fit 32-bit indices.
  SparseLayout(const std::string& codec, size_t count, const std::vector<IndexSpan>& dense);

  size_t count() const { return count_; }
  size_t dense_count() const { return dense_count_; }
  size_t sparse_count() const { return count_ - dense_count_; }
  const std::vector<IndexSpan>& dense() const { return dense_; }
  // The complement of dense(): ascending, non-empty.
  const std::vector<IndexSpan>& sparse() const { return sparse_; }

  size_t message_bytes(size_t pairs) const {
    return kSparseHeaderBytes + sizeof(float) * dense_count_ + kSparsePairBytes * pairs;
  }

 private:
  size_t count_ = 0;
  size_t dense_count_ = 0;
  std::vector<IndexSpan> dense_;
  std::vector<IndexSpan> sparse_;
};

// Writes a message in place: sized once, header filled, every pair (0, 0.0f)
// until set, so unset slots are the padding.
class SparseMessageWriter {
 public:
  SparseMessageWriter(Encoded& e, const SparseLayout& layout, size_t pairs);

  void set_dense(size_t slot, float value) { store(dense_ + sizeof(float) * slot, value); }
  void set_pair(size_t slot, uint32_t index, float value) {
    std::byte* at = pairs_ + kSparsePairBytes * slot;
    store(at, index);
    store(at + 4, value);
  }

 private:
  template <typename T>
  static void store(std::byte* at, T value) {
    static_assert(sizeof(T) == 4);
    std::memcpy(at, &value, sizeof value);  // little-endian host (asserted above)
  }

  std::byte* dense_;
  std::byte* pairs_;
};

// The pairs a message carries (k), after checking its size against `layout`.
// Throws ptrain::Error naming `codec` when the message does not fit the layout.
size_t sparse_message_pairs(const Encoded& e, const SparseLayout& layout, const std::string& codec);

// out += the message decoded: the dense part into the dense spans, the pairs
// scatter-added. Throws ptrain::Error naming `codec` on a malformed message
// (wrong size, count or dense length, or an index outside the range), before
// touching `out`.
void sparse_decode_add(const Encoded& e, const SparseLayout& layout, std::span<float> out,
                       const std::string& codec);

}  // namespace ptrain
