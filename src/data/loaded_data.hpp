#pragma once
#include <optional>
#include <string>

#include "core/dataset.hpp"

namespace ptrain {

// A training set and a test set with the same sample shape, targets and classes.
struct LoadedData {
  Dataset train, test;
};

// Nothing when `test` can be scored by a model trained on `train`; else what
// differs: "the test set's samples have shape [1, 27, 27], the training set's [1, 28, 28]".
// (A test set read past its samples' end scored 9% and exited 0, or ended in a
// LibTorch stack trace.)
std::optional<std::string> test_set_mismatch(const Dataset& train, const Dataset& test);

}  // namespace ptrain
