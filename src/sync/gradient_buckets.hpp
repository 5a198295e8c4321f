#pragma once
// Gradient buckets (as PyTorch DDP): the flat gradient buffer cut into
// contiguous ranges of whole tensors, each all-reduced as one message.
// Backward produces gradients from the last layer to the first, so buckets
// are filled in that order: bucket 0 holds the last tensors and is the first
// whose communication can start.
#include <cstddef>
#include <vector>

#include "core/flat_layout.hpp"

namespace ptrain {

struct GradientBucket {
  size_t offset = 0;         // first element in the flat buffer
  size_t count = 0;          // elements
  size_t first_segment = 0;  // the layout segments it holds: first_segment .. last_segment
  size_t last_segment = 0;
};

// Groups the layout's segments, from the last to the first, into buckets of at
// most `bucket_bytes` (a single tensor larger than that is a bucket of its own).
// A module's tensors ("3.weight" and "3.bias": the same name up to the last
// dot) go into one bucket when they fit: backward finishes them together, so a
// bucket that took the next module's bias would wait for that module's whole
// backward before its all-reduce could start.
// The plan depends only on the layout, so every worker gets the same buckets in
// the same order. Throws ptrain::Error when bucket_bytes is 0.
std::vector<GradientBucket> plan_gradient_buckets(const FlatLayout& layout, size_t bucket_bytes);

}  // namespace ptrain
