#pragma once
// A library user's own LibTorch module as a ptrain model: any
// torch::nn::Module (branches, residual connections, shared weights) with its
// own forward, and its own loss if it likes, bound to flat buffers like the
// built-in models and so trained by every strategy. What RunInputs::model
// takes (run/run.hpp):
//
//   struct NetImpl : torch::nn::Module { ...; torch::Tensor forward(torch::Tensor x); };
//   TORCH_MODULE(Net);
//   inputs.model = ptrain::torch_module<Net>("net", [](const ptrain::ModelInput& in) { return Net(in.classes); });
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "model/model_input.hpp"
#include "model/torch/flat_module.hpp"
#include "model/torch/torch_error.hpp"

namespace ptrain {

// torch's initialisers draw from its one global generator, so replicas built
// at once by several workers would take each other's numbers: each is built
// under this lock, after torch::manual_seed.
std::mutex& torch_init_mutex();

// make() with torch's generator seeded with `seed`: the same seed gives the same initial weights.
template <class Make>
auto seeded_torch_build(uint64_t seed, Make&& make) {
  std::lock_guard lock(torch_init_mutex());
  torch::manual_seed(seed);
  return make();
}

using ModelMaker = std::function<std::unique_ptr<Model>(const ModelInput&)>;

// One replica per call: make(input) under the seeded lock, run by
// holder->forward(x), scored by `loss` (empty: mean cross-entropy over the
// classes). Holder is a torch::nn::ModuleHolder, such as a TORCH_MODULE(Net) type.
template <class Holder>
ModelMaker torch_module(std::string name, std::function<Holder(const ModelInput&)> make, LossFunction loss = {}) {
  return [name = std::move(name), make = std::move(make), loss = std::move(loss)](const ModelInput& input)
             -> std::unique_ptr<Model> {
    if (!make) throw Error("model " + name + ": no function that makes the module");
    try {
      Holder holder = seeded_torch_build(input.seed, [&] { return make(input); });
      if (holder.is_empty()) throw Error("model " + name + ": the module maker returned an empty holder");
      auto module = holder.ptr();
      // A raw pointer: the FlatModule owns the module and the forward together.
      ForwardFunction forward = [m = module.get()](const torch::Tensor& x) -> torch::Tensor { return m->forward(x); };
      return std::make_unique<FlatModule>(name, std::move(module), std::move(forward), loss, input.device);
    } catch (const c10::Error& e) {
      throw Error("model " + name + ": " + torch_error_line(e));
    }
  };
}

}  // namespace ptrain
