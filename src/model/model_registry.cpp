#include "model/model_registry.hpp"

#include "core/error.hpp"

namespace ptrain {

std::unique_ptr<Model> make_model(const ModelChoice& choice, const ModelInput& input) {
  return std::visit([&](const auto& m) { return m.make(input); }, choice);
}

std::unique_ptr<Model> make_model(const ModelConfig& config, const std::vector<int64_t>& sample_shape, int classes) {
  auto choice = ModelRegistry::make(config.name);
  if (!choice) throw Error("model: " + ModelRegistry::unknown("model", config.name));
  if (auto* mlp = std::get_if<MlpOptions>(&*choice)) mlp->hidden = config.hidden;
  return make_model(*choice, ModelInput{sample_shape, classes, {}, config.init_seed});
}

}  // namespace ptrain
