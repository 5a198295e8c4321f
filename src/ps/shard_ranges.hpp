#pragma once
// How a parameter server splits the flat parameter buffer over S server
// shards: contiguous ranges whose sizes differ by at most one (the first
// n mod S shards hold one more), so a push or a pull to a shard is one span.
#include <cstddef>
#include <vector>

namespace ptrain {

struct ShardRange {
  size_t begin = 0, end = 0;  // [begin, end) in the flat buffer
  size_t size() const { return end - begin; }
};

// Throws ptrain::Error when servers < 1, or when there are fewer parameters
// than servers (a server would hold nothing).
std::vector<ShardRange> shard_ranges(size_t num_params, int servers);

// The shard that holds parameter `index` (index < the last range's end).
size_t shard_of(const std::vector<ShardRange>& ranges, size_t index);

}  // namespace ptrain
