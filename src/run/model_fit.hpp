#pragma once
// A model that was not built to the data's shape (a TorchScript file, a
// library caller's factory) is checked against the data before training: a
// model of 7 outputs on 10 classes failed at its first step, with the
// "resume from a checkpoint" exit status and a message naming neither.
#include <string>

#include "core/dataset.hpp"
#include "core/model.hpp"

namespace ptrain {

// One forward pass on the first samples of `train`, its output's shape
// against [samples, label shape..., classes], then one forward and backward
// pass (the loss); nothing for a model that cannot tell its output's shape
// (Model::output_shape). Throws ptrain::Error "model <what> does not fit the data:
// ..." naming the shapes and the classes.
void check_model_fits(Model& model, const Dataset& train, const std::string& what);

}  // namespace ptrain
