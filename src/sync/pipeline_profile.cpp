#include "sync/pipeline_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "core/error.hpp"
#include "core/stopwatch.hpp"

namespace ptrain {

std::vector<LayerCost> measure_layers(Model& model, size_t layers, const Batch& micro, int repeats) {
  std::vector<std::unique_ptr<ModelStage>> stages;
  for (size_t l = 0; l < layers; ++l) {
    stages.push_back(model.stage(l, l + 1));
    if (!stages.back()) throw Error(fmt::format("model {}: cannot run layer {} as a stage", model.name(), l));
  }
  std::vector<LayerCost> costs(layers, LayerCost{std::numeric_limits<double>::infinity(), 0});
  std::vector<double> forward(layers);
  Activations in, out;
  for (int r = 0; r < repeats; ++r) {
    for (size_t l = 0; l < layers; ++l) {
      Stopwatch clock;
      stages[l]->forward(0, micro, in, out);
      forward[l] = clock.seconds();
      costs[l].activation_bytes = stages[l]->held_bytes();
      std::swap(in, out);
    }
    Activations grad_out, grad_in;
    for (size_t l = layers; l-- > 0;) {
      Stopwatch clock;
      stages[l]->backward(0, grad_out, grad_in);
      costs[l].seconds = std::min(costs[l].seconds, forward[l] + clock.seconds());
      std::swap(grad_out, grad_in);
    }
  }
  return costs;
}

}  // namespace ptrain
