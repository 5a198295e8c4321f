#include "ps/server_stats.hpp"

#include <cstring>

#include "core/error.hpp"

namespace ptrain {

// As 64-bit words: nine counters, each histogram's length and bins, the left workers' count and ranks.
std::vector<std::byte> ServerStats::serialize() const {
  std::vector<uint64_t> words = {updates,       dropped_late,      dropped_stale,      max_clock_gap,
                                 pushed_bytes,  pulled.pulls,      pulled.dense_pulls, pulled.dense_bytes,
                                 pulled.wire_bytes};
  for (const CountHistogram* h : {&staleness, &step_batches}) {
    words.push_back(h->bins.size());
    words.insert(words.end(), h->bins.begin(), h->bins.end());
  }
  words.push_back(left_workers.size());
  words.insert(words.end(), left_workers.begin(), left_workers.end());
  std::vector<std::byte> bytes(words.size() * sizeof(uint64_t));
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

ServerStats ServerStats::deserialize(std::span<const std::byte> bytes) {
  auto bad = [] { return Error("parameter server statistics: malformed message"); };
  if (bytes.empty() || bytes.size() % sizeof(uint64_t) != 0) throw bad();
  std::vector<uint64_t> words(bytes.size() / sizeof(uint64_t));
  std::memcpy(words.data(), bytes.data(), bytes.size());
  size_t at = 0;
  auto next = [&] {
    if (at >= words.size()) throw bad();
    return words[at++];
  };
  ServerStats s;
  s.updates = next(), s.dropped_late = next(), s.dropped_stale = next(), s.max_clock_gap = next();
  s.pushed_bytes = next(), s.pulled.pulls = next(), s.pulled.dense_pulls = next();
  s.pulled.dense_bytes = next(), s.pulled.wire_bytes = next();
  for (CountHistogram* h : {&s.staleness, &s.step_batches}) {
    const uint64_t bins = next();
    if (bins > words.size()) throw bad();
    for (uint64_t i = 0; i < bins; ++i) h->bins.push_back(next());
  }
  const uint64_t left = next();
  if (left > words.size()) throw bad();
  for (uint64_t i = 0; i < left; ++i) {
    const uint64_t rank = next();
    if (rank > UINT32_MAX) throw bad();
    s.left_workers.push_back(static_cast<uint32_t>(rank));
  }
  if (at != words.size()) throw bad();
  return s;
}

ServerTraffic server_traffic(std::span<const ServerStats> shards, uint64_t worker_steps) {
  ServerTraffic t;
  t.worker_steps = worker_steps;
  for (const ServerStats& s : shards) {
    t.pushed_bytes += s.pushed_bytes;
    t.pulled += s.pulled;
  }
  return t;
}

}  // namespace ptrain
