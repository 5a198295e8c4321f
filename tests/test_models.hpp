#pragma once
// Models and runs shared by the strategy and trainer tests.
#include <algorithm>
#include <cmath>
#include <span>

#include "data/synthetic.hpp"
#include "model/softmax_regression.hpp"
#include "run/trainer.hpp"

namespace ptrain::test {

inline ModelFactory softmax_factory(const Dataset& data, uint64_t seed = 5) {
  return [&data, seed](int) {
    return std::make_unique<SoftmaxRegression>(data.sample_numel(), data.num_classes(), seed);
  };
}

// max |a - b| / max |b|: the relative difference of two parameter vectors.
inline double max_relative_difference(std::span<const float> a, std::span<const float> b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// ||a - b|| / ||b|| in the Euclidean norm.
inline double norm_relative_difference(std::span<const float> a, std::span<const float> b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    diff += d * d;
    scale += static_cast<double>(b[i]) * b[i];
  }
  return scale > 0 ? std::sqrt(diff / scale) : std::sqrt(diff);
}

}  // namespace ptrain::test
