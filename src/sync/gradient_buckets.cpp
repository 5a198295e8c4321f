#include "sync/gradient_buckets.hpp"

#include <string_view>

#include "core/error.hpp"

namespace ptrain {

namespace {

// "layers.3" for "layers.3.weight"; a name without a dot is a module of its own.
std::string_view module_of(const std::string& tensor) {
  const size_t dot = tensor.rfind('.');
  return dot == std::string::npos ? std::string_view(tensor) : std::string_view(tensor).substr(0, dot);
}

// Adds segments to the bucket plan, from the last to the first.
class BucketFiller {
 public:
  BucketFiller(const FlatLayout& layout, size_t bucket_bytes) : layout_(layout), bucket_bytes_(bucket_bytes) {}

  // Whether segments [first, last] fit into the open bucket.
  bool fits(size_t first, size_t last) const {
    return open_ && (buckets_.back().count + elements(first, last)) * sizeof(float) <= bucket_bytes_;
  }
  size_t bytes(size_t first, size_t last) const { return elements(first, last) * sizeof(float); }
  // Segments [first, last] (just below what the plan holds) into the open
  // bucket, or into a new one. Empty tensors ride along with their neighbour.
  void add(size_t first, size_t last, bool new_bucket) {
    const size_t count = elements(first, last);
    if (count == 0 && !open_) return;  // at the very end of the layout: take() gives them to the first bucket
    if (count > 0 && (new_bucket || !open_)) {
      buckets_.push_back({layout_.segments()[first].offset, count, first, last});
      open_ = true;
      return;
    }
    GradientBucket& b = buckets_.back();
    b.first_segment = first;
    b.offset = layout_.segments()[first].offset;
    b.count += count;
  }
  std::vector<GradientBucket> take() {
    // Empty tensors at the very end of the layout belong to the bucket that starts there.
    if (!buckets_.empty()) buckets_.front().last_segment = layout_.segments().size() - 1;
    return std::move(buckets_);
  }

 private:
  size_t elements(size_t first, size_t last) const {
    size_t n = 0;
    for (size_t s = first; s <= last; ++s) n += layout_.segments()[s].numel;
    return n;
  }

  const FlatLayout& layout_;
  const size_t bucket_bytes_;
  std::vector<GradientBucket> buckets_;
  bool open_ = false;
};

}  // namespace

std::vector<GradientBucket> plan_gradient_buckets(const FlatLayout& layout, size_t bucket_bytes) {
  if (bucket_bytes == 0) throw Error("strategy.bucket_size must be at least 1 byte");
  const auto& segments = layout.segments();
  BucketFiller filler(layout, bucket_bytes);
  for (size_t last = segments.size(); last-- > 0;) {
    // The module's tensors, [first, last]: backward finishes them together.
    size_t first = last;
    while (first > 0 && module_of(segments[first - 1].name) == module_of(segments[last].name)) --first;
    if (filler.fits(first, last)) {
      filler.add(first, last, false);
    } else if (filler.bytes(first, last) <= bucket_bytes) {
      filler.add(first, last, true);
    } else {
      // A module larger than a bucket: its tensors one by one, each a bucket of its own when it must.
      for (size_t s = last + 1; s-- > first;) filler.add(s, s, !filler.fits(s, s));
    }
    last = first;  // the loop goes on below it
  }
  return filler.take();
}

}  // namespace ptrain
