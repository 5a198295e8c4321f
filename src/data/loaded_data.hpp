#pragma once
#include "core/dataset.hpp"

namespace ptrain {

// A training set and a test set with the same sample shape, targets and classes.
struct LoadedData {
  Dataset train, test;
};

}  // namespace ptrain
