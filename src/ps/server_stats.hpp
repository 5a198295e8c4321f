#pragma once
// What a parameter-server shard records over a run: the staleness of every
// gradient it applied, and what it dropped. Staleness is the shard's version
// when the gradient is applied minus the version the worker pulled.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/count_histogram.hpp"

namespace ptrain {

struct ServerStats {
  CountHistogram staleness;         // gradients applied, by staleness
  uint64_t updates = 0;             // optimizer steps taken (versions)
  uint64_t dropped_late = 0;        // ps-backup: came after their step had its W - b gradients
  uint64_t dropped_stale = 0;       // --stale-policy drop:T: staler than T
  uint64_t max_clock_gap = 0;       // ssp (shard 0): the largest lead of a starting worker over the slowest
  CountHistogram step_batches;      // ssp and async (shard 0): steps begun, by the base batches each took
  std::vector<uint32_t> left_workers;  // async: workers that failed and left, in order

  void record_staleness(uint64_t s) { staleness.record(s); }
  uint64_t applied() const { return staleness.total(); }  // gradients applied
  double mean_staleness() const { return staleness.mean(); }
  // The smallest s with at least q of the applied gradients at or below it (0 when none).
  uint64_t staleness_quantile(double q) const { return staleness.quantile(q); }
  uint64_t max_staleness() const { return staleness.max(); }

  std::vector<std::byte> serialize() const;
  // Throws ptrain::Error on a malformed message.
  static ServerStats deserialize(std::span<const std::byte> bytes);
};

}  // namespace ptrain
