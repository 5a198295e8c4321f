#include "model/model_registry.hpp"

#include "core/error.hpp"

namespace ptrain {

std::unique_ptr<Model> make_model(const ModelChoice& choice, const ModelInput& input) {
  return std::visit([&](const auto& m) { return m.make(input); }, choice);
}

std::optional<ModelSize> size_before_making(const ModelChoice& choice, const ModelInput& input) {
  return std::visit(
      [&](const auto& m) -> std::optional<ModelSize> {
        if constexpr (requires { m.parameters(input); }) return ModelSize{m.parameters(input), m.size_field};
        else return std::nullopt;
      },
      choice);
}

std::optional<SequenceLength> sequence_length(const ModelChoice& choice) {
  return std::visit(
      [](const auto& m) -> std::optional<SequenceLength> {
        if constexpr (requires { m.sequence_length(); }) return SequenceLength{m.sequence_length(), m.sequence_field};
        else return std::nullopt;
      },
      choice);
}

double LstmOptions::parameters(const ModelInput& input) const {
  const double v = input.classes, e = static_cast<double>(embedding_size), h = static_cast<double>(hidden_size);
  double count = v * e;  // the embedding
  for (int l = 0; l < layers; ++l) count += 4 * h * ((l == 0 ? e : h) + h + 2);  // weights and both biases
  return count + (tie ? 0 : v * h) + v;  // the decoder
}

double MlpOptions::parameters(const ModelInput& input) const {
  double inputs = 1;
  for (int64_t d : input.sample_shape) inputs *= static_cast<double>(d);
  double count = 0, width = inputs;
  for (int64_t h : hidden) {
    count += width * static_cast<double>(h) + static_cast<double>(h);
    width = static_cast<double>(h);
  }
  return count + width * input.classes + input.classes;
}

std::unique_ptr<Model> make_model(const ModelConfig& config, const std::vector<int64_t>& sample_shape, int classes) {
  auto choice = ModelRegistry::make(config.name);
  if (!choice) throw Error("model: " + ModelRegistry::unknown("model", config.name));
  if (auto* mlp = std::get_if<MlpOptions>(&*choice)) mlp->hidden = config.hidden;
  return make_model(*choice, ModelInput{sample_shape, classes, {}, config.init_seed});
}

}  // namespace ptrain
