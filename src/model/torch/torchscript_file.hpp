#pragma once
// TorchScript files: loading one as the network a model runs.
#include <torch/script.h>

#include <string>

namespace ptrain {

// The module in a TorchScript file, on the CPU. For a file ptrain saved
// (model/saved_model.hpp) that is the network inside it, which takes
// standardised inputs like every model ptrain trains. Errors name the file:
// "model torchscript: PATH: no such file", "...: not a TorchScript module ...".
torch::jit::Module load_torchscript_network(const std::string& path);

}  // namespace ptrain
