#pragma once
// What a model is built for: the shape of one sample and of its targets, the
// classes, the seed that fixes its initial weights, and the device it computes on.
#include <cstdint>
#include <vector>

#include "core/compute_device.hpp"

namespace ptrain {

struct ModelInput {
  std::vector<int64_t> sample_shape;  // e.g. {1, 28, 28}
  int classes = 0;                    // or the vocabulary's size
  std::vector<int64_t> label_shape;   // {}: a class per sample; {T}: a next token per position
  uint64_t seed = 0;  // the same seed gives the same initial parameters
  ComputeDevice device = {};  // where this replica computes (one GPU, never "cuda" unresolved)
};

}  // namespace ptrain
