#pragma once
// Small synthetic classification sets for tests and quick runs: Gaussian
// clusters, one per class, deterministic from the seed.
#include <cstdint>

#include "core/dataset.hpp"

namespace ptrain {

Dataset make_gaussian_clusters(size_t samples, size_t features, int classes, uint64_t seed,
                               float spread = 1.0f);

}  // namespace ptrain
