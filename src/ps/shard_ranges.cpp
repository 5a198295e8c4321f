#include "ps/shard_ranges.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace ptrain {

std::vector<ShardRange> shard_ranges(size_t num_params, int servers) {
  if (servers < 1) throw Error(fmt::format("strategy.servers must be at least 1 (got {})", servers));
  const auto s = static_cast<size_t>(servers);
  if (num_params < s)
    throw Error(fmt::format("strategy.servers {}: the model has only {} parameter(s), fewer than the servers",
                            servers, num_params));
  const size_t base = num_params / s, larger = num_params % s;
  std::vector<ShardRange> ranges(s);
  size_t begin = 0;
  for (size_t i = 0; i < s; ++i) {
    const size_t size = base + (i < larger ? 1 : 0);
    ranges[i] = {begin, begin + size};
    begin += size;
  }
  return ranges;
}

size_t shard_of(const std::vector<ShardRange>& ranges, size_t index) {
  const auto it = std::upper_bound(ranges.begin(), ranges.end(), index,
                                   [](size_t i, const ShardRange& r) { return i < r.end; });
  if (it == ranges.end())
    throw Error(fmt::format("parameter {} is outside the {} shards' range", index, ranges.size()));
  return static_cast<size_t>(it - ranges.begin());
}

}  // namespace ptrain
