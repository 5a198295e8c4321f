#pragma once
// Small synthetic classification sets for tests and quick runs: Gaussian
// clusters, one per class, deterministic from the seed.
#include <cstdint>

#include "core/dataset.hpp"

namespace ptrain {

Dataset make_gaussian_clusters(size_t samples, size_t features, int classes, uint64_t seed,
                               float spread = 1.0f);

// Token sequences for language modelling: `samples` sequences of `length`
// token ids (stored as floats) with the next token at each position as the
// target. Each token has a fixed successor, followed with probability
// 1 - noise (else a uniform token): deterministic from the seed.
Dataset make_token_sequences(size_t samples, size_t length, int vocabulary, uint64_t seed, float noise = 0.1f);

}  // namespace ptrain
