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

// What a shard sent the workers that pulled its range (ps/pull_encoder.hpp).
struct PullCounts {
  uint64_t pulls = 0;
  uint64_t dense_pulls = 0;  // answered with the dense parameters (all of them without a pull codec)
  uint64_t dense_bytes = 0;  // fp32 bytes of the parameters pulled
  uint64_t wire_bytes = 0;   // payload bytes sent

  PullCounts& operator+=(const PullCounts& o) {
    pulls += o.pulls, dense_pulls += o.dense_pulls, dense_bytes += o.dense_bytes, wire_bytes += o.wire_bytes;
    return *this;
  }
};

struct ServerStats {
  CountHistogram staleness;         // gradients applied, by staleness
  uint64_t updates = 0;             // optimizer steps taken (versions)
  uint64_t dropped_late = 0;        // ps-backup: came after their step had its W - b gradients
  uint64_t dropped_stale = 0;       // --stale-policy drop:T: staler than T
  uint64_t max_clock_gap = 0;       // ssp (shard 0): the largest lead of a starting worker over the slowest
  CountHistogram step_batches;      // ssp and async (shard 0): steps begun, by the base batches each took
  std::vector<uint32_t> left_workers;  // async: workers that failed and left, in order
  uint64_t pushed_bytes = 0;        // payload bytes of the gradients pushed to the shard
  PullCounts pulled;

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

// Every shard's bytes together, for the report and the terminal: what a
// worker's step pushed and pulled, on average over all workers' steps.
struct ServerTraffic {
  uint64_t pushed_bytes = 0;
  PullCounts pulled;
  uint64_t worker_steps = 0;  // the steps of all workers together

  double pushed_per_step() const { return per_step(pushed_bytes); }
  double pulled_per_step() const { return per_step(pulled.wire_bytes); }
  // Dense fp32 bytes over bytes sent (1 for dense pulls, or none).
  double pull_ratio() const {
    return pulled.wire_bytes > 0 ? static_cast<double>(pulled.dense_bytes) / static_cast<double>(pulled.wire_bytes)
                                 : 1.0;
  }

 private:
  double per_step(uint64_t bytes) const {
    return worker_steps > 0 ? static_cast<double>(bytes) / static_cast<double>(worker_steps) : 0.0;
  }
};
ServerTraffic server_traffic(std::span<const ServerStats> shards, uint64_t worker_steps);

}  // namespace ptrain
