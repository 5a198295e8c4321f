#include "sync/gradient_buckets.hpp"

#include "core/error.hpp"

namespace ptrain {

std::vector<GradientBucket> plan_gradient_buckets(const FlatLayout& layout, size_t bucket_bytes) {
  if (bucket_bytes == 0) throw Error("strategy.bucket_size must be at least 1 byte");
  const auto& segments = layout.segments();
  std::vector<GradientBucket> buckets;
  bool open = false;
  for (size_t s = segments.size(); s-- > 0;) {
    const FlatSegment& seg = segments[s];
    if (seg.numel == 0) {  // an empty tensor rides along with its neighbour
      if (open) buckets.back().first_segment = s;
      continue;
    }
    const size_t bytes = seg.numel * sizeof(float);
    if (open && (buckets.back().count * sizeof(float) + bytes) <= bucket_bytes) {
      GradientBucket& b = buckets.back();
      b.first_segment = s;
      b.offset = seg.offset;
      b.count += seg.numel;
    } else {
      buckets.push_back({seg.offset, seg.numel, s, s});
      open = true;
    }
  }
  // Empty tensors at the very end of the layout belong to the bucket that starts there.
  if (!buckets.empty()) buckets.front().last_segment = segments.size() - 1;
  return buckets;
}

}  // namespace ptrain
