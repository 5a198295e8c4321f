// model/saved_model.hpp: a trained model written as a TorchScript module and
// read back. The file's forward, on samples as the data set stores them,
// computes what the trained model computed on them standardised.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <filesystem>

#include "model/saved_model.hpp"
#include "model/torch/flat_module.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

const ModelInput kInput{{1, 8, 8}, 3, {}, 7};

// n images of 8 x 8 with pixels in [0, 1] as IDX images load: bytes / 255.
Dataset raw_images(size_t n) {
  std::vector<float> pixels(n * 64);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<float>((i * 37 + i / 64 * 11) % 256) / 255.f;
  std::vector<int64_t> labels(n);
  for (size_t i = 0; i < n; ++i) labels[i] = static_cast<int64_t>(i % 3);
  return Dataset("raw", {1, 8, 8}, std::move(pixels), std::move(labels), 3);
}

SavedModelFacts facts_for(const Dataset& raw) {
  SavedModelFacts f;
  f.ptrain_version = "test";
  f.input_shape = raw.sample_shape();
  f.classes = raw.num_classes();
  f.standardization = fit_standardization(raw);
  return f;
}

Dataset standardised(Dataset data, Standardization s) {
  apply_standardization(data, s);
  return data;
}

// Parameters a little away from their initial values, so the file's must be the ones given.
std::vector<float> trained_params(Model& model) {
  std::vector<float> p(model.params().begin(), model.params().end());
  for (size_t i = 0; i < p.size(); ++i) p[i] += 0.001f * static_cast<float>(i % 7);
  return p;
}

TEST(SavedModel, BuiltInModelsComputeTheTrainedBitsOnRawSamples) {
  test::ScratchDir dir;
  const Dataset raw = raw_images(40);
  const SavedModelFacts facts = facts_for(raw);
  const Dataset seen = standardised(raw, *facts.standardization);
  for (const char* name : {"mlp", "cnn", "softmax"}) {
    const ModelChoice choice = *ModelRegistry::make(name);
    auto replica = make_model(choice, kInput);
    const auto params = trained_params(*replica);
    std::copy(params.begin(), params.end(), replica->params().begin());
    const std::string path = dir.file(std::string(name) + ".pt");
    save_model_file(path, choice, kInput, params, facts, R"({"hello": 1})", "test");

    SavedModel saved = load_saved_model(path);
    EXPECT_EQ(saved.facts.model, name);
    EXPECT_EQ(saved.facts.ptrain_version, "test");
    EXPECT_EQ(saved.facts.input_shape, kInput.sample_shape);
    EXPECT_TRUE(saved.facts.label_shape.empty());
    EXPECT_EQ(saved.facts.classes, 3);
    ASSERT_TRUE(saved.facts.standardization);
    EXPECT_EQ(saved.facts.standardization->mean,
              facts.standardization->mean);  // float -> double -> float: exact
    EXPECT_EQ(saved.facts.standardization->stddev, facts.standardization->stddev);
    EXPECT_FALSE(saved.facts.own_loss);
    EXPECT_EQ(saved.metadata_json, R"({"hello": 1})");
    ASSERT_EQ(saved.model->params().size(), params.size()) << name;
    EXPECT_TRUE(std::equal(params.begin(), params.end(), saved.model->params().begin())) << name;

    const Metrics trained = replica->evaluate(seen);
    const Metrics loaded = saved.model->evaluate(raw);
    if (std::string(name) == "softmax") {
      // The native model sums in its loop's order, TorchScript in BLAS's: a
      // near tie between two classes could go either way.
      EXPECT_NEAR(loaded.loss, trained.loss, 1e-5) << name;
      EXPECT_NEAR(loaded.accuracy, trained.accuracy, 1.0 / 40) << name;
    } else {
      EXPECT_EQ(loaded.accuracy, trained.accuracy) << name;
      EXPECT_EQ(loaded.loss, trained.loss) << name;  // the same ATen operators: the same bits
      auto& module = dynamic_cast<FlatModule&>(*replica);
      const auto x = torch::from_blob(const_cast<float*>(seen.features().data()), {40, 1, 8, 8});
      const auto raw_x = torch::from_blob(const_cast<float*>(raw.features().data()), {40, 1, 8, 8});
      torch::NoGradGuard no_grad;
      EXPECT_TRUE(torch::equal(module.forward(x), dynamic_cast<FlatModule&>(*saved.model).forward(raw_x)))
          << name;
    }
  }
}

TEST(SavedModel, TakesUint8PixelsAsStoredAndHasTheTrainingLoss) {
  test::ScratchDir dir;
  const Dataset raw = raw_images(16);
  const ModelChoice choice = MlpOptions{.hidden = {8}};
  auto replica = make_model(choice, kInput);
  const std::vector<float> params(replica->params().begin(), replica->params().end());
  save_model_file(dir.file("m.pt"), choice, kInput, params, facts_for(raw), "{}", "test");
  torch::jit::Module m = torch::jit::load(dir.file("m.pt"));
  std::vector<uint8_t> bytes(16 * 64);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>((i * 37 + i / 64 * 11) % 256);
  const auto as_bytes = torch::from_blob(bytes.data(), {16, 1, 8, 8}, torch::kUInt8);
  const auto as_floats = torch::from_blob(const_cast<float*>(raw.features().data()), {16, 1, 8, 8});
  torch::NoGradGuard no_grad;
  const auto out = m.forward({as_bytes}).toTensor();
  EXPECT_TRUE(torch::equal(out, m.forward({as_floats}).toTensor()));
  // float64 samples (NumPy's default) are taken as float32, as ptrain's .npy reader does.
  EXPECT_TRUE(torch::equal(out, m.forward({as_floats.to(torch::kFloat64)}).toTensor()));
  const auto labels = torch::arange(16, torch::kInt64).remainder(3);
  const double loss = m.get_method("loss")({out, labels}).toTensor().item<double>();
  EXPECT_NEAR(loss, torch::nn::functional::cross_entropy(out, labels).item<double>(), 1e-7);
  EXPECT_EQ(m.attr("model_name").toStringRef(), "mlp");
  EXPECT_EQ(m.attr("task").toStringRef(), "classification");
  EXPECT_FALSE(m.is_training());  // saved for inference
}

// A TorchScript module as a Python user brings one (here written in C++): a
// frozen parameter, and a loss of its own.
void write_user_module(const std::string& path) {
  torch::jit::Module user(c10::QualifiedName("__torch__.UserNet"),
                          std::make_shared<torch::jit::CompilationUnit>(), true);
  user.register_attribute("training", c10::BoolType::get(), true);
  torch::manual_seed(3);
  user.register_parameter("w", torch::randn({3, 64}).requires_grad_(true), false);
  user.register_parameter("b", torch::zeros({3}).requires_grad_(true), false);
  user.register_parameter("scale", torch::full({3}, 1.5f), false);  // no gradient: frozen
  user.define(R"(
def forward(self, x: Tensor) -> Tensor:
    return torch.linear(x.flatten(1), self.w, self.b) * self.scale

def loss(self, output: Tensor, labels: Tensor) -> Tensor:
    return 2.0 * torch.cross_entropy_loss(output, labels)
)");
  user.save(path);
}

TEST(SavedModel, ATorchScriptModuleIsSavedAsItselfWithTheTrainedWeights) {
  test::ScratchDir dir;
  write_user_module(dir.file("user.pt"));
  const Dataset raw = raw_images(30);
  const SavedModelFacts facts = facts_for(raw);
  const Dataset seen = standardised(raw, *facts.standardization);
  const ModelChoice choice = TorchScriptOptions{dir.file("user.pt")};
  auto replica = make_model(choice, kInput);
  ASSERT_EQ(replica->params().size(), 3u * 64u + 3u);  // w and b; scale is frozen
  const auto params = trained_params(*replica);
  std::copy(params.begin(), params.end(), replica->params().begin());
  save_model_file(dir.file("saved.pt"), choice, kInput, params, facts, "{}", "test");

  SavedModel saved = load_saved_model(dir.file("saved.pt"));
  EXPECT_EQ(saved.facts.model, "torchscript");
  EXPECT_TRUE(saved.facts.own_loss);
  EXPECT_TRUE(std::equal(params.begin(), params.end(), saved.model->params().begin()));
  const Metrics trained = replica->evaluate(seen);
  const Metrics loaded = saved.model->evaluate(raw);
  EXPECT_EQ(loaded.loss, trained.loss);  // its own loss (twice the cross-entropy), the same bits
  EXPECT_EQ(loaded.accuracy, trained.accuracy);
  torch::jit::Module file = torch::jit::load(dir.file("saved.pt"));
  EXPECT_EQ(file.attr("model").toModule().type()->name()->name(), "UserNet");  // the user's module inside

  // Trained again (--model saved.pt): the network inside, on standardised samples as before.
  auto again = make_model(TorchScriptOptions{dir.file("saved.pt")}, kInput);
  EXPECT_TRUE(std::equal(params.begin(), params.end(), again->params().begin()));
  EXPECT_EQ(again->evaluate(seen).loss, trained.loss);
}

TEST(SavedModel, BadFilesAreOneLineErrors) {
  test::ScratchDir dir;
  write_user_module(dir.file("foreign.pt"));
  const Dataset raw = raw_images(8);
  const ModelChoice choice = SoftmaxOptions{};
  auto replica = make_model(choice, kInput);
  const std::vector<float> params(replica->params().begin(), replica->params().end());
  save_model_file(dir.file("good.pt"), choice, kInput, params, facts_for(raw), "{}", "test");
  const auto bytes = test::read_bytes(dir.file("good.pt"));
  test::write_bytes(dir.file("truncated.pt"), std::vector<uint8_t>(bytes.begin(), bytes.end() - 100));
  test::write_bytes(dir.file("text.pt"), {'h', 'i', '\n'});
  torch::jit::Module newer(c10::QualifiedName("__torch__.Newer"),
                           std::make_shared<torch::jit::CompilationUnit>(), true);
  newer.register_attribute(kSavedModelFormatAttribute, c10::IntType::get(), int64_t{2});
  newer.save(dir.file("newer.pt"));
  const std::pair<std::string, std::string> cases[] = {
      {"missing.pt", "missing.pt: no such file"},
      {"", "not a regular file"},
      {"text.pt", "text.pt: not a TorchScript file, or a damaged one ("},
      {"truncated.pt", "truncated.pt: not a TorchScript file, or a damaged one ("},
      {"foreign.pt", "foreign.pt: a TorchScript module, but not one ptrain saved"},
      {"newer.pt", "newer.pt: saved in format 2; this ptrain reads format 1"},
  };
  for (const auto& [file, expected] : cases) {
    const std::string message = test::error_message([&] { load_saved_model(dir.file(file)); });
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(SavedModel, SavingNeverWritesThroughALinkNorLeavesAPartialFile) {
  test::ScratchDir dir;
  const Dataset raw = raw_images(8);
  const ModelChoice softmax = SoftmaxOptions{};
  auto replica = make_model(softmax, kInput);
  const std::vector<float> params(replica->params().begin(), replica->params().end());
  test::write_bytes(dir.file("target"), {'k', 'e', 'e', 'p'});
  std::filesystem::create_symlink(dir.file("target"), dir.file("link.pt"));
  std::string message = test::error_message([&] {
    save_model_file(dir.file("link.pt"), softmax, kInput, params, facts_for(raw), "{}",
                    "run.save_model: link");
  });
  EXPECT_NE(message.find("run.save_model: link: is a symbolic link; not replaced"), std::string::npos)
      << message;
  EXPECT_EQ(test::read_bytes(dir.file("target")).size(), 4u);

  // The user's file changed shape during the run: nothing is written.
  write_user_module(dir.file("user.pt"));
  const std::vector<float> wrong(10, 0.f);
  message = test::error_message([&] {
    save_model_file(dir.file("out.pt"), TorchScriptOptions{dir.file("user.pt")}, kInput, wrong,
                    facts_for(raw), "{}", "run.save_model: out.pt");
  });
  EXPECT_NE(message.find("its parameters hold 195 values, the trained model's 10"), std::string::npos)
      << message;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{"link.pt", "target", "user.pt"}));  // no out.pt, no temporary file
}

}  // namespace
}  // namespace ptrain
