#include "core/count_histogram.hpp"

#include <algorithm>

namespace ptrain {

void CountHistogram::record(uint64_t value) {
  if (bins.size() <= value) bins.resize(value + 1, 0);
  bins[value]++;
}

void CountHistogram::merge(const CountHistogram& other) {
  if (bins.size() < other.bins.size()) bins.resize(other.bins.size(), 0);
  for (size_t s = 0; s < other.bins.size(); ++s) bins[s] += other.bins[s];
}

uint64_t CountHistogram::total() const {
  uint64_t n = 0;
  for (uint64_t c : bins) n += c;
  return n;
}

double CountHistogram::mean() const {
  const uint64_t n = total();
  if (n == 0) return 0;
  double sum = 0;
  for (size_t s = 0; s < bins.size(); ++s) sum += static_cast<double>(s) * static_cast<double>(bins[s]);
  return sum / static_cast<double>(n);
}

uint64_t CountHistogram::quantile(double q) const {
  const uint64_t n = total();
  if (n == 0) return 0;
  uint64_t seen = 0;
  for (size_t s = 0; s < bins.size(); ++s) {
    seen += bins[s];
    if (static_cast<double>(seen) >= q * static_cast<double>(n)) return s;
  }
  return bins.size() - 1;
}

uint64_t CountHistogram::max() const {
  for (size_t s = bins.size(); s > 0; --s)
    if (bins[s - 1] > 0) return s - 1;
  return 0;
}

}  // namespace ptrain
