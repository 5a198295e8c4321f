#pragma once
// A trained model as a file: a TorchScript module that Python's
// torch.jit.load (and LibTorch's) runs as it is. model(x) gives the outputs
// (logits) for a batch of samples as the data set stores them: uint8 pixels
// (IDX files, uint8 .npy arrays), or features as ptrain loads them; the
// input preprocessing ptrain trained with is part of its forward.
//
// The file's module (__torch__.ptrain.SavedModel):
//   forward(x)            self.model.forward(self.preprocess(x))
//   preprocess(x)         classification: uint8 -> float32 / 255, other types -> float32, then,
//                         when `standardized`, (x - mean) / std; language modelling: token ids -> int64
//   loss(output, labels)  the mean loss ptrain trained with (cross-entropy, or the module's own)
//   model                 the network, on preprocessed inputs: a built-in model written in
//                         TorchScript (ModelScript), or the TorchScript module the run trained
//   attributes            ptrain_format (1), ptrain_version, model_name, task ("classification" or
//                         "language-model"), classes, input_shape and label_shape (one sample's),
//                         standardized, mean, std, own_loss, recurrent (absent in files saved
//                         before it: false)
// and an extra file, ptrain.json, with what the caller adds (run/ writes the
// plan that trained it and ptrain's version and commit).
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/dataset.hpp"
#include "core/model.hpp"
#include "data/fashion_mnist.hpp"
#include "model/model_input.hpp"
#include "model/model_registry.hpp"

namespace ptrain {

inline constexpr int kSavedModelFormat = 1;
// The attribute that marks a module as one ptrain saved, holding its format.
inline constexpr const char* kSavedModelFormatAttribute = "ptrain_format";
inline constexpr const char* kSavedModelMetadataFile = "ptrain.json";

// What a saved model says of itself (its attributes).
struct SavedModelFacts {
  std::string model;                 // the registered kind that trained it: mlp, cnn, softmax, torchscript
  std::string ptrain_version;        // of the ptrain that saved it
  std::vector<int64_t> input_shape;  // one sample's, e.g. {1, 28, 28}
  std::vector<int64_t> label_shape;  // {}: a class per sample; {T}: a next token per position
  int classes = 0;                   // or the vocabulary's size
  std::optional<Standardization> standardization;  // none: features as loaded (token ids always)
  bool own_loss = false;  // the module's loss method scores it (set when saving), not cross-entropy
  // Its forward takes sequences of any length from a zero state (ModelScript::recurrent; set when saving).
  bool recurrent = false;
  Task task() const { return label_shape.empty() ? Task::Classification : Task::LanguageModel; }
};

// False in a build without LibTorch, which can neither save nor load models.
bool can_save_models();

// Writes the model `choice`, built for `input`, with the trained `params` (in
// its layout's order), to `path` as above, through core/atomic_file.hpp: the
// file is complete or absent, and a symlink, FIFO or device is never written
// through. `facts` gives the attributes but for own_loss and recurrent; `metadata_json`
// becomes ptrain.json. Errors begin with `label` (e.g. "run.save_model: PATH").
// A kind without a TorchScript form (no script()) cannot be saved.
void save_model_file(const std::string& path, const ModelChoice& choice, const ModelInput& input,
                     std::span<const float> params, const SavedModelFacts& facts,
                     const std::string& metadata_json, const std::string& label);

// Whether `choice` can be saved (it has a TorchScript form, and this build has LibTorch); if not, why.
std::optional<std::string> why_not_savable(const ModelChoice& choice);

struct SavedModel {
  // Runs the file's forward: evaluate() takes a data set as ptrain loads it,
  // before standardisation, and scores it as ptrain's training did.
  std::unique_ptr<Model> model;
  SavedModelFacts facts;
  std::string metadata_json;  // ptrain.json ("" if the file has none)
};

// Loads a file save_model_file wrote. Throws ptrain::Error naming the file:
// missing, not a regular file, not a TorchScript file (or a damaged one), a
// TorchScript module ptrain did not save, a newer format.
SavedModel load_saved_model(const std::string& path);

}  // namespace ptrain
