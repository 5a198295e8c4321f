#pragma once
// Builds any Model by name. The header is torch-free so train/ and cli/ can
// call it; the LibTorch models behind it live in this folder.
#include <memory>

#include "core/model.hpp"
#include "model/model_config.hpp"

namespace ptrain {

// sample_shape is one sample's shape ({1, 28, 28} for Fashion-MNIST). The same
// config (and init_seed) always gives the same initial parameters. Throws
// ptrain::Error for an unknown name or a shape the model cannot take.
std::unique_ptr<Model> make_model(const ModelConfig& config, const std::vector<int64_t>& sample_shape,
                                  int classes);

// `n` LibTorch intra-op threads and `n` OpenBLAS threads per worker, so that
// workers do not oversubscribe the cores.
void set_compute_threads(int n);

}  // namespace ptrain
