#pragma once
// The built-in LibTorch models. The options are torch-free so that the plan can
// name them; make() lives in model/torch/torch_models.cpp (and, in a build
// without LibTorch, model/without_torch/ says so).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/fields.hpp"
#include "core/model.hpp"
#include "model/model_input.hpp"
#include "model/model_script.hpp"

namespace ptrain {

struct MlpOptions {
  static constexpr std::string_view name = "mlp";
  static constexpr std::string_view summary = "multi-layer perceptron: Linear and ReLU layers (LibTorch)";
  std::vector<int64_t> hidden = {128};
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("hidden", s.hidden, "hidden widths, comma-separated", Range{});
  }
  std::unique_ptr<Model> make(const ModelInput& input) const;
  ModelScript script(const ModelInput& input) const;
  // The parameters make() would allocate (weights and biases), counted in a
  // double so that no width overflows it; known before anything is allocated.
  double parameters(const ModelInput& input) const;
  static constexpr const char* size_field = "hidden";
};

struct CnnOptions {
  static constexpr std::string_view name = "cnn";
  static constexpr std::string_view summary =
      "two conv+pool blocks and two fully connected layers, for images (LibTorch)";
  template <class Self, class Visit>
  static void fields(Self&, Visit&&) {}
  std::unique_ptr<Model> make(const ModelInput& input) const;
  ModelScript script(const ModelInput& input) const;
};

// A model defined in Python: torch.jit.script(m).save(path), loaded with
// LibTorch and bound to flat buffers like the built-in models. Its weights
// come from the file (the seed does not change them); a `loss(output, labels)`
// method, if it has one, replaces cross-entropy. A file ptrain saved
// (--save) trains on as the network inside it (its `model`), which takes
// standardised inputs as every model ptrain trains does.
struct TorchScriptOptions {
  static constexpr std::string_view name = "torchscript";
  static constexpr std::string_view summary =
      "a TorchScript module saved from Python, its weights from the file (LibTorch)";
  std::string path;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("path", s.path, "a module scripted and saved in Python: torch.jit.script(m).save(path)", Range{});
  }
  std::unique_ptr<Model> make(const ModelInput& input) const;
  // Saved as itself, with the trained weights.
  ModelScript script(const ModelInput&) const {
    ModelScript s;
    s.module_file = path;
    return s;
  }
};

// `n` LibTorch intra-op threads and `n` OpenBLAS threads per worker, so that
// workers do not oversubscribe the cores.
void set_compute_threads(int n);

}  // namespace ptrain
