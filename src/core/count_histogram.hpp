#pragma once
// A histogram of small non-negative integers (staleness, in versions): bin s
// counts the events of value s. Shared by the parameter servers and the
// shared-memory algorithms, which both report staleness the same way.
#include <cstdint>
#include <vector>

namespace ptrain {

struct CountHistogram {
  std::vector<uint64_t> bins;  // [s]: events of value s; grows as needed

  void record(uint64_t value);
  void merge(const CountHistogram& other);
  uint64_t total() const;  // the sum of the bins
  double mean() const;     // 0 when empty
  // The smallest s with at least q of the events at or below it (0 when empty).
  uint64_t quantile(double q) const;
  uint64_t max() const;  // 0 when empty
};

}  // namespace ptrain
