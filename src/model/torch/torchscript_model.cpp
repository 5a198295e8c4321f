// A TorchScript module saved from Python, bound to flat buffers like the
// built-in models (model/torch/flat_module.hpp).
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <filesystem>

#include "core/error.hpp"
#include "model/saved_model.hpp"
#include "model/torch/flat_module.hpp"
#include "model/torch/torch_error.hpp"
#include "model/torch/torch_module_model.hpp"
#include "model/torch/torchscript_file.hpp"
#include "model/torch_models.hpp"

namespace ptrain {

namespace {

// The interpreter runs the same ATen operators, and the same autograd, as a
// C++ module without the graph optimizer, whose profiling executor's
// differentiable subgraphs cost time on these small CPU models.
ForwardFunction plain_forward(torch::jit::Method method) {
  return [method = std::move(method)](const torch::Tensor& x) -> torch::Tensor {
    torch::jit::GraphOptimizerEnabledGuard plain(false);
    return method({x}).toTensor();
  };
}

// A scripted torch.nn.Sequential runs its children in order: a pipeline may
// cut it between them. Any other module's forward is its own.
std::vector<ModuleChild> sequential_children(const torch::jit::Module& module) {
  const auto type = module.type()->name();
  if (!type || !type->qualifiedName().ends_with("torch.nn.modules.container.Sequential")) return {};
  std::vector<ModuleChild> children;
  for (const auto& child : module.named_children()) {
    size_t trained = 0;
    for (const auto& p : child.value.named_parameters(/*recurse=*/true)) trained += p.value.requires_grad() ? 1 : 0;
    children.push_back({child.name + ": " + child.value.type()->name()->name(),
                        plain_forward(child.value.get_method("forward")), trained});
  }
  return children;
}

}  // namespace

torch::jit::Module load_torchscript_network(const std::string& path) {
  const std::string what = "model torchscript: " + path + ": ";
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw Error(what + "no such file");
  if (!std::filesystem::is_regular_file(status)) throw Error(what + "not a regular file");
  torch::jit::Module module;
  try {
    // One load at a time: the workers' replicas load at once, and loading
    // registers the file's classes in LibTorch's type tables.
    std::lock_guard lock(torch_init_mutex());
    module = torch::jit::load(path, torch::kCPU);
  } catch (const c10::Error& e) {
    throw Error(what + "not a TorchScript module saved by torch.jit.save (" + torch_error_line(e) + ")");
  }
  // A file ptrain saved: its forward standardises raw samples; the network
  // inside takes them standardised, as ptrain hands them to a model.
  if (module.hasattr(kSavedModelFormatAttribute) && module.hasattr("model") &&
      module.attr("model").isModule())
    return module.attr("model").toModule();
  return module;
}

// The file has the weights: `input` gives only the device.
std::unique_ptr<Model> TorchScriptOptions::make(const ModelInput& input) const {
  if (path.empty())
    throw Error("model torchscript: no path given: the file of a module scripted and saved in Python (model.path)");
  torch::jit::Module module = load_torchscript_network(path);
  const auto forward = module.find_method("forward");
  if (!forward) throw Error("model torchscript: " + path + ": the module has no forward method");
  if (!input.device.cpu()) module.to(torch_device(input.device));
  FlatModule::Parts parts;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) parts.parameters.emplace_back(p.name, p.value);
  // A Method holds its module: the functions below keep it alive.
  parts.forward = plain_forward(*forward);
  parts.children = sequential_children(module);
  if (const auto loss = module.find_method("loss")) {
    parts.loss = [loss = *loss](const torch::Tensor& output, const torch::Tensor& labels) -> torch::Tensor {
      torch::jit::GraphOptimizerEnabledGuard plain(false);
      return loss({output, labels}).toTensor();
    };
  }
  parts.set_training = [module](bool on) mutable { module.train(on); };
  try {
    return std::make_unique<FlatModule>("torchscript", std::move(parts), input.device);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (" + path + ")");
  }
}

}  // namespace ptrain
