// A trained model written as a TorchScript module, and read back
// (model/saved_model.hpp has the file's shape).
#include <fmt/format.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <filesystem>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "model/saved_model.hpp"
#include "model/torch/flat_module.hpp"
#include "model/torch/torch_error.hpp"
#include "model/torch/torch_module_model.hpp"
#include "model/torch/torchscript_file.hpp"

namespace ptrain {

namespace {

// The same for every saved model; the network is self.model. (TorchScript
// compiled from C++ has no name for dtypes: 0 is torch.uint8.)
constexpr const char* kPreprocessAndForward = R"(
def preprocess(self, x: Tensor) -> Tensor:
    if self.task == "language-model":
        return x.long()
    if x.dtype == 0:
        x = x.float() / 255.0
    else:
        x = x.float()
    if self.standardized:
        x = (x - self.mean) / self.std
    return x

def forward(self, x: Tensor) -> Tensor:
    return self.model.forward(self.preprocess(x))
)";

// Mean cross-entropy over every target, as model/torch/flat_module.cpp trains with.
constexpr const char* kCrossEntropyLoss = R"(
def loss(self, output: Tensor, labels: Tensor) -> Tensor:
    return torch.cross_entropy_loss(output.reshape([-1, output.size(-1)]), labels.reshape([-1]))
)";

constexpr const char* kOwnLoss = R"(
def loss(self, output: Tensor, labels: Tensor) -> Tensor:
    return self.model.loss(output, labels)
)";

const char* task_name(Task task) { return task == Task::LanguageModel ? "language-model" : "classification"; }

torch::jit::Module new_module(const std::string& class_name) {
  torch::jit::Module m(c10::QualifiedName("__torch__.ptrain." + class_name),
                       std::make_shared<torch::jit::CompilationUnit>(), /*shouldMangle=*/true);
  // Module::train() and Python's .eval() set it on every submodule.
  m.register_attribute("training", c10::BoolType::get(), false);
  return m;
}

c10::List<int64_t> int_list(const std::vector<int64_t>& values) {
  return c10::List<int64_t>(c10::ArrayRef<int64_t>(values));
}

torch::Tensor tensor_of(std::span<const float> params, size_t offset, c10::IntArrayRef shape) {
  // from_blob does not copy; clone() does, so the file's tensors own their storage.
  return torch::from_blob(const_cast<float*>(params.data() + offset), shape, torch::kFloat32).clone();
}

// A built-in model: its TorchScript source over the layout's parameters.
torch::jit::Module network_from_source(const ModelScript& script, const FlatLayout& layout,
                                       std::span<const float> params, const std::string& name) {
  const auto& segments = layout.segments();
  if (script.parameters.size() != segments.size())
    throw Error(fmt::format("model {}: its TorchScript form names {} parameters, its layout holds {}", name,
                            script.parameters.size(), segments.size()));
  torch::jit::Module net = new_module(script.class_name);
  for (size_t i = 0; i < segments.size(); ++i)
    net.register_parameter(script.parameters[i],
                           tensor_of(params, segments[i].offset, segments[i].shape).requires_grad_(true),
                           /*is_buffer=*/false);
  net.define(script.forward);
  return net;
}

// A TorchScript module: the file's, with the trained values in the
// parameters ptrain trained (model/torch/flat_module.hpp's bound_parameters).
torch::jit::Module network_from_file(const std::string& file, std::span<const float> params) {
  torch::jit::Module net = load_torchscript_network(file);
  std::vector<std::pair<std::string, torch::Tensor>> all;
  for (const auto& p : net.named_parameters(/*recurse=*/true)) all.emplace_back(p.name, p.value);
  const auto bound = bound_parameters(all, "torchscript");
  size_t total = 0;
  for (const auto& [key, p] : bound) total += static_cast<size_t>(p.numel());
  if (total != params.size())
    throw Error(
        fmt::format("model torchscript: {}: its parameters hold {} values, the trained model's {} (was the "
                    "file replaced during the run?)",
                    file, total, params.size()));
  torch::NoGradGuard no_grad;
  size_t offset = 0;
  for (const auto& [key, p] : bound) {
    p.copy_(tensor_of(params, offset, p.sizes()));
    offset += static_cast<size_t>(p.numel());
  }
  return net;
}

torch::jit::Module saved_module(const torch::jit::Module& net, const SavedModelFacts& f) {
  torch::jit::Module top = new_module("SavedModel");
  top.register_module("model", net);
  top.register_attribute(kSavedModelFormatAttribute, c10::IntType::get(), int64_t{kSavedModelFormat});
  top.register_attribute("ptrain_version", c10::StringType::get(), f.ptrain_version);
  top.register_attribute("model_name", c10::StringType::get(), f.model);
  top.register_attribute("task", c10::StringType::get(), std::string(task_name(f.task())));
  top.register_attribute("classes", c10::IntType::get(), int64_t{f.classes});
  top.register_attribute("input_shape", c10::ListType::ofInts(), int_list(f.input_shape));
  top.register_attribute("label_shape", c10::ListType::ofInts(), int_list(f.label_shape));
  top.register_attribute("standardized", c10::BoolType::get(), f.standardization.has_value());
  // Floats exactly: TorchScript's float is a double, and each float32 is one.
  top.register_attribute("mean", c10::FloatType::get(),
                         static_cast<double>(f.standardization ? f.standardization->mean : 0.0f));
  top.register_attribute("std", c10::FloatType::get(),
                         static_cast<double>(f.standardization ? f.standardization->stddev : 1.0f));
  top.register_attribute("own_loss", c10::BoolType::get(), f.own_loss);
  top.register_attribute("recurrent", c10::BoolType::get(), f.recurrent);
  top.define(kPreprocessAndForward);
  top.define(f.own_loss ? kOwnLoss : kCrossEntropyLoss);
  top.eval();  // for inference, as a user loads it
  return top;
}

template <class Read>
auto attribute(const torch::jit::Module& top, const char* name, const std::string& what, Read read) {
  if (!top.hasattr(name)) throw Error(what + "a damaged ptrain model: it has no attribute " + name);
  try {
    return read(top.attr(name));
  } catch (const c10::Error&) {
    throw Error(what + "a damaged ptrain model: its attribute " + std::string(name) + " has the wrong type");
  }
}

}  // namespace

bool can_save_models() { return true; }

void save_model_file(const std::string& path, const ModelChoice& choice, const ModelInput& input,
                     std::span<const float> params, const SavedModelFacts& given,
                     const std::string& metadata_json, const std::string& label) {
  if (auto why = why_not_savable(choice)) throw Error(label + ": " + *why);
  check_output_path(path, label);
  const std::string name(ModelRegistry::name_of(choice));
  std::string bytes;
  try {
    torch::jit::Module net;
    bool recurrent = false;
    std::visit(
        [&](const auto& o) {
          if constexpr (requires { o.script(input); }) {
            const ModelScript script = o.script(input);
            recurrent = script.recurrent;
            if (!script.module_file.empty()) {
              net = network_from_file(script.module_file, params);
            } else {
              const auto replica = make_model(choice, input);  // its layout orders the parameters
              if (replica->params().size() != params.size())
                throw Error(fmt::format("model {}: {} trained values for a model of {} parameters", name,
                                        params.size(), replica->params().size()));
              net = network_from_source(script, replica->layout(), params, name);
            }
          }
        },
        choice);
    SavedModelFacts facts = given;
    facts.model = name;
    facts.own_loss = net.find_method("loss").has_value();
    facts.recurrent = recurrent;
    std::ostringstream out;
    saved_module(net, facts).save(out, {{kSavedModelMetadataFile, metadata_json}});
    bytes = out.str();
  } catch (const Error& e) {
    throw Error(label + ": " + e.what());
  } catch (const c10::Error& e) {
    throw Error(label + ": model " + name + ": " + torch_error_line(e));
  } catch (const std::exception& e) {
    throw Error(label + ": model " + name + ": " + first_line(e.what()));
  }
  write_file_atomically(path, std::as_bytes(std::span(bytes.data(), bytes.size())), label);
}

SavedModel load_saved_model(const std::string& path) {
  const std::string what = path + ": ";
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw Error(what + "no such file");
  if (!std::filesystem::is_regular_file(status)) throw Error(what + "not a regular file");
  torch::jit::ExtraFilesMap extra{{kSavedModelMetadataFile, ""}};
  torch::jit::Module top;
  try {
    std::lock_guard lock(torch_init_mutex());  // loading registers the file's classes
    top = torch::jit::load(path, torch::kCPU, extra);
  } catch (const c10::Error& e) {
    throw Error(what + "not a TorchScript file, or a damaged one (" + torch_error_line(e) + ")");
  } catch (const std::exception& e) {
    throw Error(what + "not a TorchScript file, or a damaged one (" + first_line(e.what()) + ")");
  }
  if (!top.hasattr(kSavedModelFormatAttribute))
    throw Error(what + "a TorchScript module, but not one ptrain saved (ptrain train --save writes them)");
  const int64_t format =
      attribute(top, kSavedModelFormatAttribute, what, [](const c10::IValue& v) { return v.toInt(); });
  if (format != kSavedModelFormat)
    throw Error(
        fmt::format("{}saved in format {}; this ptrain reads format {}", what, format, kSavedModelFormat));
  auto text = [](const c10::IValue& v) { return v.toStringRef(); };
  auto ints = [](const c10::IValue& v) { return v.toIntVector(); };
  auto flag = [](const c10::IValue& v) { return v.toBool(); };
  auto number = [](const c10::IValue& v) { return v.toDouble(); };
  SavedModel saved;
  SavedModelFacts& f = saved.facts;
  f.model = attribute(top, "model_name", what, text);
  f.ptrain_version = attribute(top, "ptrain_version", what, text);
  f.input_shape = attribute(top, "input_shape", what, ints);
  f.label_shape = attribute(top, "label_shape", what, ints);
  f.classes =
      static_cast<int>(attribute(top, "classes", what, [](const c10::IValue& v) { return v.toInt(); }));
  if (attribute(top, "standardized", what, flag))
    f.standardization = Standardization{static_cast<float>(attribute(top, "mean", what, number)),
                                        static_cast<float>(attribute(top, "std", what, number))};
  f.own_loss = attribute(top, "own_loss", what, flag);
  f.recurrent = top.hasattr("recurrent") && attribute(top, "recurrent", what, flag);
  saved.metadata_json = extra[kSavedModelMetadataFile];
  const auto forward = top.find_method("forward");
  const auto loss = top.find_method("loss");
  if (!forward || !loss) throw Error(what + "a damaged ptrain model: it has no forward or loss method");

  FlatModule::Parts parts;
  for (const auto& p : top.named_parameters(/*recurse=*/true)) parts.parameters.emplace_back(p.name, p.value);
  // As model/torch/torchscript_model.cpp runs a module: the interpreter without
  // its graph optimizer runs the same ATen operators as the trained model.
  parts.forward = [forward = *forward](const torch::Tensor& x) -> torch::Tensor {
    torch::jit::GraphOptimizerEnabledGuard plain(false);
    return forward({x}).toTensor();
  };
  if (f.own_loss) {
    parts.loss = [loss = *loss](const torch::Tensor& output, const torch::Tensor& labels) -> torch::Tensor {
      torch::jit::GraphOptimizerEnabledGuard plain(false);
      return loss({output, labels}).toTensor();
    };
  }
  parts.set_training = [top](bool on) mutable { top.train(on); };
  try {
    saved.model = std::make_unique<FlatModule>(f.model, std::move(parts));
  } catch (const Error& e) {
    throw Error(what + e.what());
  }
  return saved;
}

}  // namespace ptrain
