#pragma once
// A model by name, as older callers give it (model_registry.hpp has the typed choice).
#include <cstdint>
#include <string>
#include <vector>

namespace ptrain {

struct ModelConfig {
  std::string name = "mlp";             // a name in ModelRegistry
  std::vector<int64_t> hidden = {128};  // MLP hidden widths
  uint64_t init_seed = 0;               // fixes the initial weights
};

}  // namespace ptrain
