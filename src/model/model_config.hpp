#pragma once
// Which model to build and how: the CLI's --model and its options.
#include <cstdint>
#include <string>
#include <vector>

namespace ptrain {

struct ModelConfig {
  std::string name = "mlp";             // mlp | cnn | softmax
  std::vector<int64_t> hidden = {128};  // MLP hidden widths
  uint64_t init_seed = 0;               // fixes the initial weights
};

// The model names `make_model` accepts.
inline const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"mlp", "cnn", "softmax"};
  return names;
}

}  // namespace ptrain
