#include "compress/codec.hpp"

#include <algorithm>

#include "core/flat_layout.hpp"

namespace ptrain {

CodecRange codec_range(const FlatLayout& layout, size_t begin, size_t end) {
  CodecRange range{end - begin, {}};
  for (const FlatSegment& seg : layout.segments()) {
    if (seg.shape.size() != 1 || seg.numel == 0) continue;
    const size_t a = std::max(seg.offset, begin), b = std::min(seg.offset + seg.numel, end);
    if (a < b) range.one_dim.emplace_back(a - begin, b - begin);
  }
  return range;
}

}  // namespace ptrain
