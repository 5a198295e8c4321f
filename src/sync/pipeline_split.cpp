#include "sync/pipeline_split.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "core/error.hpp"

namespace ptrain {

std::vector<size_t> balanced_cut(const std::vector<double>& costs, size_t stages, const StageFits& fits) {
  const size_t n = costs.size();
  if (stages < 1 || stages > n) throw Error(fmt::format("{} stages of {} layers", stages, n));
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // worst[k][i]: the least costliest stage of layers [i, n) in k stages; from[k][i]: its first cut.
  std::vector<std::vector<double>> worst(stages + 1, std::vector<double>(n + 1, kNone));
  std::vector<std::vector<size_t>> from(stages + 1, std::vector<size_t>(n + 1, n));
  worst[0][n] = 0;
  for (size_t k = 1; k <= stages; ++k)
    for (size_t i = 0; i + k <= n; ++i)
      for (size_t j = n - (k - 1); j > i; --j) {  // the stage [i, j), latest first: earlier stages larger
        if (fits && !fits(stages - k, i, j)) continue;
        const double w = std::max(prefix[j] - prefix[i], worst[k - 1][j]);
        if (w < worst[k][i]) worst[k][i] = w, from[k][i] = j;
      }
  if (worst[stages][0] == kNone) return {};  // no cut whose every stage fits
  std::vector<size_t> cut{0};
  for (size_t k = stages, i = 0; k > 0; --k) cut.push_back(i = from[k][i]);
  return cut;
}

std::vector<size_t> cut_at(const std::vector<int64_t>& boundaries, size_t layers, size_t stages) {
  if (boundaries.size() + 1 != stages)
    throw Error(fmt::format("{} boundaries make {} stages, not {} (give the first layer of each stage after the "
                            "first)",
                            boundaries.size(), boundaries.size() + 1, stages));
  std::vector<size_t> cut{0};
  for (const int64_t b : boundaries) {
    if (b <= static_cast<int64_t>(cut.back()) || b >= static_cast<int64_t>(layers))
      throw Error(fmt::format("boundaries {}: each must be a layer index from 1 to {}, increasing (the model has {} "
                              "layers)",
                              fmt::join(boundaries, ","), layers - 1, layers));
    cut.push_back(static_cast<size_t>(b));
  }
  cut.push_back(layers);
  return cut;
}

}  // namespace ptrain
