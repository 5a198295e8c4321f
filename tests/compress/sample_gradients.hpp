#pragma once
// Gradients for the codec tests, the same with every standard library.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "compress/codec.hpp"
#include "core/rng.hpp"

namespace ptrain::test {

// A codec's range over a whole buffer of `count` values.
inline CodecRange whole_range(size_t count) {
  CodecRange range;
  range.count = count;
  return range;
}

// Standard normal deviates (Box-Muller).
inline std::vector<float> normal_gradient(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    const double u1 = 1.0 - static_cast<double>(rng.uniform());  // (0, 1]
    const double u2 = static_cast<double>(rng.uniform());
    g[i] = scale * static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
  }
  return g;
}

// Cauchy: heavy tails, no mean.
inline std::vector<float> cauchy_gradient(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    const double u = (static_cast<double>(rng.uniform()) + 0.5 / 16777216.0);  // (0, 1)
    g[i] = static_cast<float>(std::tan(std::numbers::pi * (u - 0.5)));
  }
  return g;
}

// Student's t with 2 degrees of freedom: Z / sqrt(chi2_2 / 2), chi2_2 = -2 ln U.
inline std::vector<float> student_t2_gradient(size_t n, uint64_t seed) {
  const std::vector<float> z = normal_gradient(n, seed);
  Rng rng(seed ^ 0x5eedull);
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    const double u = 1.0 - static_cast<double>(rng.uniform());
    g[i] = static_cast<float>(z[i] / std::sqrt(-std::log(u)));
  }
  return g;
}

// Nearly constant: 1 plus a tiny normal ripple.
inline std::vector<float> nearly_constant_gradient(size_t n, uint64_t seed) {
  std::vector<float> g = normal_gradient(n, seed, 1e-4f);
  for (float& x : g) x += 1.0f;
  return g;
}

}  // namespace ptrain::test
