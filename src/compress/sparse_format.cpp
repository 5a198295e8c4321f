#include "compress/sparse_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/error.hpp"

namespace ptrain {

namespace {

uint32_t load_u32(const std::byte* at) {
  uint32_t value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

float load_f32(const std::byte* at) {
  float value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

}  // namespace

SparseLayout::SparseLayout(const std::string& codec, size_t count, const std::vector<IndexSpan>& dense)
    : count_(count) {
  if (count > std::numeric_limits<uint32_t>::max())
    throw Error(fmt::format("{}: a range of {} elements is too large for 32-bit indices (at most {})", codec,
                            count, std::numeric_limits<uint32_t>::max()));
  size_t next = 0;  // first element not yet placed
  for (const auto& [begin, end] : dense) {
    if (begin > end || end > count || begin < next)
      throw Error(
          fmt::format("{}: 1-D span [{}, {}) is not ascending, disjoint and within the range of {} elements",
                      codec, begin, end, count));
    if (begin == end) continue;
    if (begin > next) sparse_.emplace_back(next, begin);
    dense_.emplace_back(begin, end);
    dense_count_ += end - begin;
    next = end;
  }
  if (next < count) sparse_.emplace_back(next, count);
}

SparseMessageWriter::SparseMessageWriter(Encoded& e, const SparseLayout& layout, size_t pairs) {
  e.count = layout.count();
  // assign, not resize: every byte zero, so unset pairs are (0, 0.0f).
  e.bytes.assign(layout.message_bytes(pairs), std::byte{0});
  const auto dense_count = static_cast<uint32_t>(layout.dense_count());
  const auto pair_count = static_cast<uint32_t>(pairs);
  std::memcpy(e.bytes.data(), &dense_count, 4);
  std::memcpy(e.bytes.data() + 4, &pair_count, 4);
  dense_ = e.bytes.data() + kSparseHeaderBytes;
  pairs_ = dense_ + sizeof(float) * layout.dense_count();
}

size_t sparse_message_pairs(const Encoded& e, const SparseLayout& layout, const std::string& codec) {
  if (e.count != layout.count())
    throw Error(
        fmt::format("{}: a message of {} elements for a range of {}", codec, e.count, layout.count()));
  if (e.bytes.size() < kSparseHeaderBytes)
    throw Error(fmt::format("{}: a message of {} bytes is shorter than its header", codec, e.bytes.size()));
  const uint32_t dense_count = load_u32(e.bytes.data());
  const uint32_t pairs = load_u32(e.bytes.data() + 4);
  if (dense_count != layout.dense_count())
    throw Error(
        fmt::format("{}: a message with {} dense values for a range with {} (1-D tensors sent dense on "
                    "one worker but not on another?)",
                    codec, dense_count, layout.dense_count()));
  if (e.bytes.size() != layout.message_bytes(pairs))
    throw Error(fmt::format("{}: a message of {} bytes, but its header says {} (dense {}, pairs {})", codec,
                            e.bytes.size(), layout.message_bytes(pairs), dense_count, pairs));
  return pairs;
}

void sparse_decode_add(const Encoded& e, const SparseLayout& layout, std::span<float> out,
                       const std::string& codec) {
  if (out.size() != layout.count())
    throw Error(fmt::format("{}: decoding into {} elements, but the range has {}", codec, out.size(),
                            layout.count()));
  const size_t pairs = sparse_message_pairs(e, layout, codec);
  const std::byte* dense = e.bytes.data() + kSparseHeaderBytes;
  const std::byte* pair = dense + sizeof(float) * layout.dense_count();
  // Check every index first, so that a bad message leaves `out` as it was.
  uint32_t largest = 0;
  for (size_t p = 0; p < pairs; ++p) largest = std::max(largest, load_u32(pair + kSparsePairBytes * p));
  if (pairs > 0 && largest >= out.size())
    throw Error(
        fmt::format("{}: a message with index {} for a range of {} elements", codec, largest, out.size()));
  for (const auto& [begin, end] : layout.dense())
    for (size_t i = begin; i < end; ++i, dense += sizeof(float)) out[i] += load_f32(dense);
  float* to = out.data();
  for (size_t p = 0; p < pairs; ++p, pair += kSparsePairBytes) to[load_u32(pair)] += load_f32(pair + 4);
}

}  // namespace ptrain
