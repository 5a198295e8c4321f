#include "data/synthetic.hpp"

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace ptrain {
namespace {

// Seed streams, so centres and noise do not share random numbers.
constexpr uint64_t kCentreStream = 1;
constexpr uint64_t kNoiseStream = 2;
// Centre coordinates are uniform in [-kCentreRange, kCentreRange]: with the
// default spread of 1 neighbouring clusters overlap a little, so a model has
// something to learn but can get well above chance.
constexpr float kCentreRange = 2.0f;

// Standard normal deviates by the Box-Muller transform, which (unlike
// std::normal_distribution) gives the same numbers with every standard library.
class NormalSource {
 public:
  explicit NormalSource(uint64_t seed) : rng_(seed) {}

  float next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - static_cast<double>(rng_.uniform());  // (0, 1]: log is finite
    const double u2 = static_cast<double>(rng_.uniform());
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    spare_ = static_cast<float>(radius * std::sin(angle));
    has_spare_ = true;
    return static_cast<float>(radius * std::cos(angle));
  }

 private:
  Rng rng_;
  float spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace

Dataset make_gaussian_clusters(size_t samples, size_t features, int classes, uint64_t seed, float spread) {
  if (features == 0) throw Error("synthetic data: needs at least one feature");
  if (classes <= 0) throw Error("synthetic data: needs at least one class, got " + std::to_string(classes));
  if (!(spread >= 0) || !std::isfinite(spread))
    throw Error("synthetic data: spread must be finite and non-negative, got " + std::to_string(spread));

  const auto class_count = static_cast<size_t>(classes);
  Rng centre_rng(derive_seed(seed, kCentreStream));
  std::vector<float> centres(class_count * features);
  for (float& c : centres) c = (2.0f * centre_rng.uniform() - 1.0f) * kCentreRange;

  // Labels go round-robin, so every prefix (Dataset::head) is balanced.
  NormalSource noise(derive_seed(seed, kNoiseStream));
  std::vector<float> values(samples * features);
  std::vector<int64_t> labels(samples);
  for (size_t i = 0; i < samples; ++i) {
    const size_t label = i % class_count;
    labels[i] = static_cast<int64_t>(label);
    const float* centre = &centres[label * features];
    float* row = &values[i * features];
    for (size_t f = 0; f < features; ++f) row[f] = centre[f] + spread * noise.next();
  }
  return Dataset("gaussian-clusters", {static_cast<int64_t>(features)}, std::move(values), std::move(labels),
                 classes);
}

}  // namespace ptrain

namespace ptrain {

Dataset make_token_sequences(size_t samples, size_t length, int vocabulary, uint64_t seed, float noise) {
  if (length == 0) throw Error("synthetic sequences: need a length of at least 1");
  if (vocabulary < 2) throw Error("synthetic sequences: need a vocabulary of at least 2 tokens");
  if (!(noise >= 0 && noise <= 1)) throw Error("synthetic sequences: noise must be in [0, 1]");
  const auto v = static_cast<uint64_t>(vocabulary);
  Rng rng(derive_seed(seed, kNoiseStream));
  // A fixed successor for every token (a random permutation), followed with
  // probability 1 - noise: a language a small model can learn, whose best
  // perplexity is known from `noise`.
  std::vector<uint64_t> successor(v);
  for (uint64_t t = 0; t < v; ++t) successor[t] = t;
  Rng order(derive_seed(seed, kCentreStream));
  order.shuffle(std::span<uint64_t>(successor));
  std::vector<float> inputs(samples * length);
  std::vector<int64_t> targets(samples * length);
  for (size_t i = 0; i < samples; ++i) {
    uint64_t token = rng.below(v);
    for (size_t p = 0; p < length; ++p) {
      inputs[i * length + p] = static_cast<float>(token);
      token = rng.uniform() < noise ? rng.below(v) : successor[token];
      targets[i * length + p] = static_cast<int64_t>(token);
    }
  }
  return Dataset("token-sequences", {static_cast<int64_t>(length)}, std::move(inputs), std::move(targets), vocabulary,
                 {static_cast<int64_t>(length)});
}

}  // namespace ptrain
