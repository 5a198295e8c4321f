#include "model/saved_model.hpp"

namespace ptrain {

std::optional<std::string> why_not_savable(const ModelChoice& choice) {
  if (!can_save_models())
    return "saving a model needs LibTorch (the file is a TorchScript module); this build of ptrain has none "
           "(built "
           "with PTRAIN_WITH_TORCH=OFF)";
  const bool scripted = std::visit(
      [](const auto& o) {
        return requires { o.script(ModelInput{}); };
      },
      choice);
  if (!scripted)
    return "model " + std::string(ModelRegistry::name_of(choice)) +
           " has no TorchScript form, so it cannot be saved";
  return std::nullopt;
}

}  // namespace ptrain
