#include "core/registry.hpp"

#include <algorithm>
#include <vector>

namespace ptrain {

namespace {

// Insertions, deletions, substitutions and swaps of neighbours (optimal string
// alignment), so that "trian" is one edit from "train".
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> closest_name(std::string_view wrong, std::span<const std::string_view> names) {
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (auto n : names) {
    const size_t d = edit_distance(wrong, n);
    if (!best || d < best_distance) best = std::string(n), best_distance = d;
  }
  // A third of the name may differ: "hybird" -> hybrid, "zip" is no "fp16".
  if (best && best_distance > 0 && best_distance <= std::max<size_t>(1, best->size() / 3)) return best;
  return std::nullopt;
}

}  // namespace ptrain
