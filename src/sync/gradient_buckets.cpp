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

  // Whether `count` more elements fit into the open bucket.
  bool fits(size_t count) const {
    return open_ && (buckets_.back().count + count) * sizeof(float) <= bucket_bytes_;
  }
  // Segments [first, last] (just below what the plan holds, `count` elements)
  // into the open bucket, or into a new one. Empty tensors ride along with
  // their neighbour.
  void add(size_t first, size_t last, size_t count, bool new_bucket) {
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
    size_t count = segments[last].numel;
    while (first > 0 && module_of(segments[first - 1].name) == module_of(segments[last].name))
      count += segments[--first].numel;
    if (filler.fits(count)) {
      filler.add(first, last, count, false);
    } else if (count * sizeof(float) <= bucket_bytes) {
      filler.add(first, last, count, true);
    } else {
      // A module larger than a bucket: its tensors one by one, each a bucket of its own when it must.
      for (size_t s = last + 1; s-- > first;)
        filler.add(s, s, segments[s].numel, !filler.fits(segments[s].numel));
    }
    last = first;  // the loop goes on below it
  }
  return filler.take();
}

}  // namespace ptrain
