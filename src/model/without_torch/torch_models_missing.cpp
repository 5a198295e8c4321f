// A build without LibTorch (PTRAIN_WITH_TORCH=OFF, as the sanitizer builds are)
// has no LibTorch models: choosing one is an error that says so.
#include "core/error.hpp"
#include "model/blas_check.hpp"
#include "model/lstm_options.hpp"
#include "model/torch_models.hpp"

namespace ptrain {

std::unique_ptr<Model> MlpOptions::make(const ModelInput&) const {
  throw Error("model mlp: this build of ptrain has no LibTorch (built with PTRAIN_WITH_TORCH=OFF)");
}

std::unique_ptr<Model> CnnOptions::make(const ModelInput&) const {
  throw Error("model cnn: this build of ptrain has no LibTorch (built with PTRAIN_WITH_TORCH=OFF)");
}

ModelScript MlpOptions::script(const ModelInput&) const {
  throw Error("model mlp: this build of ptrain has no LibTorch (built with PTRAIN_WITH_TORCH=OFF)");
}

ModelScript CnnOptions::script(const ModelInput&) const {
  throw Error("model cnn: this build of ptrain has no LibTorch (built with PTRAIN_WITH_TORCH=OFF)");
}

std::unique_ptr<Model> TorchScriptOptions::make(const ModelInput&) const {
  throw Error("model torchscript: this build of ptrain has no LibTorch (built with PTRAIN_WITH_TORCH=OFF)");
}

std::unique_ptr<Model> LstmOptions::make(const ModelInput&) const {
  throw Error("model lstm: this build of ptrain has no LibTorch (built with PTRAIN_WITH_TORCH=OFF)");
}

ModelScript LstmOptions::script(const ModelInput&) const {
  throw Error("model lstm: this build of ptrain has no LibTorch (built with PTRAIN_WITH_TORCH=OFF)");
}

void set_compute_threads(int n) { set_openblas_threads(n); }

}  // namespace ptrain
