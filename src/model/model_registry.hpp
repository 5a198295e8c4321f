#pragma once
// The models a run can choose (--model, the plan's `model`). Adding one is its
// options struct (`name`, `fields`, `make(ModelInput)`) and one line below.
#include <memory>
#include <optional>

#include "core/registry.hpp"
#include "model/lstm_options.hpp"
#include "model/model_config.hpp"
#include "model/softmax_regression.hpp"
#include "model/torch_models.hpp"

namespace ptrain {

using ModelRegistry = Registry<MlpOptions, CnnOptions, SoftmaxOptions, LstmOptions, TorchScriptOptions>;
using ModelChoice = ModelRegistry::Choice;

std::unique_ptr<Model> make_model(const ModelChoice& choice, const ModelInput& input);

// The parameters a model of `choice` has for `input`, and the field that makes
// the count large ("hidden"), where its options can (the MLP's widths);
// nothing for kinds whose size only the data (bounded by the data's own
// memory) or a file decides.
struct ModelSize {
  double parameters = 0;
  std::string field;
};
std::optional<ModelSize> size_before_making(const ModelChoice& choice, const ModelInput& input);

// How many tokens a sample of a token stream holds for a model of `choice`:
// the kind's own (the LSTM's bptt, its field `sequence_field`), or nothing for
// a kind without one, which takes kDefaultSequenceLength.
constexpr size_t kDefaultSequenceLength = 35;
struct SequenceLength {
  size_t tokens = 0;
  std::string field;
};
std::optional<SequenceLength> sequence_length(const ModelChoice& choice);

// The older call: by name, with the MLP's widths. Throws ptrain::Error for an unknown name.
std::unique_ptr<Model> make_model(const ModelConfig& config, const std::vector<int64_t>& sample_shape, int classes);

}  // namespace ptrain
