#pragma once
// What each of a model's layers costs, measured: its forward and backward
// passes on one micro-batch, run layer by layer as a pipeline of one stage
// a layer would run them, and the activations each holds for its backward.
// A pipeline whose boundaries are not given cuts where these times balance
// (sync/pipeline_split.hpp), so that a layer that computes much on few
// parameters (a convolution) weighs what it costs.
#include <cstddef>
#include <vector>

#include "core/dataset.hpp"
#include "core/model.hpp"

namespace ptrain {

struct LayerCost {
  double seconds = 0;           // forward and backward, the quickest of the repeats
  size_t activation_bytes = 0;  // held for its backward
};

// `repeats` times each layer of `model`'s `layers` on `micro`; overwrites the
// model's gradients (whatever the next step computes replaces them).
std::vector<LayerCost> measure_layers(Model& model, size_t layers, const Batch& micro, int repeats);

}  // namespace ptrain
