#include "data/random_subset.hpp"

#include <algorithm>
#include <numeric>

#include "core/rng.hpp"

namespace ptrain {

Dataset random_subset(const Dataset& data, size_t n, uint64_t seed) {
  if (n == 0 || n >= data.size()) return data;
  std::vector<size_t> order(data.size());
  std::iota(order.begin(), order.end(), size_t{0});
  Rng rng(seed);
  rng.shuffle(std::span<size_t>(order));
  order.resize(n);
  std::sort(order.begin(), order.end());
  std::vector<float> features;
  features.reserve(n * data.sample_numel());
  std::vector<int64_t> labels;
  labels.reserve(n);
  for (size_t i : order) {
    const auto x = data.sample(i);
    features.insert(features.end(), x.begin(), x.end());
    labels.push_back(data.label(i));
  }
  return Dataset(data.name() + " (random " + std::to_string(n) + ")", data.sample_shape(), std::move(features),
                 std::move(labels), data.num_classes());
}

}  // namespace ptrain
