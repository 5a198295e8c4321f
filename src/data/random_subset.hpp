#pragma once
// A fixed random sample of a data set (for measuring the training loss on
// part of the training set): the same seed gives the same samples.
#include <cstdint>

#include "core/dataset.hpp"

namespace ptrain {

// n samples drawn without replacement, kept in their original order; the whole set when n is 0 or at least its size.
Dataset random_subset(const Dataset& data, size_t n, uint64_t seed);

}  // namespace ptrain
