// A build without LibTorch cannot write or read TorchScript files: saving and
// loading a model is an error that says so.
#include "core/error.hpp"
#include "model/saved_model.hpp"

namespace ptrain {

namespace {

const char* kNoTorch = "this build of ptrain has no LibTorch (built with PTRAIN_WITH_TORCH=OFF)";

}  // namespace

bool can_save_models() { return false; }

void save_model_file(const std::string&, const ModelChoice&, const ModelInput&, std::span<const float>,
                     const SavedModelFacts&, const std::string&, const std::string& label) {
  throw Error(label + ": saving a model needs LibTorch (the file is a TorchScript module); " + kNoTorch);
}

SavedModel load_saved_model(const std::string& path) {
  throw Error(path + ": loading a saved model needs LibTorch (the file is a TorchScript module); " +
              kNoTorch);
}

}  // namespace ptrain
