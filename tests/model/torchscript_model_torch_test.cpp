// A model scripted and saved in Python (torch.jit.script(m).save(path)),
// loaded as --model torchscript: bound to flat buffers like the built-in
// models, and the same computation as the built-in MLP bit for bit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "data/synthetic.hpp"
#include "model/model_registry.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

// ptrain's built-in MLP (784-128-10) in PyTorch, and the same with a loss of its own.
constexpr const char* kScript = R"(
import sys
import torch
from torch import nn

class WithLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    @torch.jit.export
    def loss(self, output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return 2.0 * nn.functional.cross_entropy(output, labels)

torch.manual_seed(5)
mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
torch.jit.script(mlp).save(sys.argv[1] + "/mlp.pt")
torch.jit.script(WithLoss()).save(sys.argv[1] + "/with_loss.pt")
)";

class TorchScriptModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) return;
    dir_ = new test::ScratchDir;
    std::ofstream(dir_->file("make.py")) << kScript;
    const std::string command = "/usr/bin/python3 " + dir_->file("make.py") + " " + dir_->path().string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!dir_) GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian: python3-torch)";
  }
  static std::unique_ptr<Model> load(const std::string& file, uint64_t seed = 1) {
    TorchScriptOptions options;
    options.path = dir_->file(file);
    return make_model(ModelChoice(options), ModelInput{{1, 28, 28}, 10, {}, seed});
  }
  static std::unique_ptr<Model> builtin_mlp(uint64_t seed = 1) {
    return make_model(ModelChoice(MlpOptions{}), ModelInput{{1, 28, 28}, 10, {}, seed});
  }
  static Batch batch(size_t n, uint64_t seed) { return test::image_batch(n, seed); }
  static test::ScratchDir* dir_;
};
test::ScratchDir* TorchScriptModel::dir_ = nullptr;

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_F(TorchScriptModel, LoadsWithTheBuiltInMlpsLayout) {
  auto script = load("mlp.pt");
  auto mlp = builtin_mlp();
  EXPECT_EQ(script->name(), "torchscript");
  EXPECT_EQ(script->params().size(), 784u * 128 + 128 + 128 * 10 + 10);
  ASSERT_EQ(script->layout().segments().size(), mlp->layout().segments().size());
  for (size_t i = 0; i < mlp->layout().segments().size(); ++i) {
    EXPECT_EQ(script->layout().segments()[i].name, mlp->layout().segments()[i].name);
    EXPECT_EQ(script->layout().segments()[i].shape, mlp->layout().segments()[i].shape);
  }
}

// A scripted Sequential runs its children in order, so a pipeline may cut
// it between its layers: two stages give the whole module's loss and
// gradients bit for bit. A module with a forward of its own is refused.
TEST_F(TorchScriptModel, AScriptedSequentialSplitsIntoPipelineStages) {
  auto split = load("mlp.pt");
  auto whole = load("mlp.pt");
  std::string why_not;
  const auto layers = split->layers(why_not);
  ASSERT_EQ(layers.size(), 2u) << why_not;  // Flatten with the first Linear, then ReLU and the second
  EXPECT_EQ(layers[1].first_segment, 2u);
  const Batch b = batch(16, 3);
  const float loss = whole->forward_backward(b);
  auto first = split->stage(0, 1), last = split->stage(1, 2);
  Activations none, activations, gradient, unused;
  first->forward(0, b, none, activations);
  EXPECT_EQ(activations.shape, (std::vector<int64_t>{16, 128}));
  EXPECT_EQ(last->forward(0, b, activations, unused), loss);
  last->backward(0, none, gradient);
  first->backward(0, gradient, unused);
  EXPECT_TRUE(same_bits(split->grads(), whole->grads()));

  EXPECT_TRUE(load("with_loss.pt")->layers(why_not).empty());
  EXPECT_NE(why_not.find("model torchscript is not a Sequential (a module that runs its children in order)"),
            std::string::npos)
      << why_not;
}

TEST_F(TorchScriptModel, TheWeightsComeFromTheFileNotTheSeed) {
  auto a = load("mlp.pt", 1), b = load("mlp.pt", 2);
  EXPECT_TRUE(same_bits(a->params(), b->params()));
  // What seed 1 would give (the file was made with torch.manual_seed(5)).
  EXPECT_FALSE(same_bits(a->params(), builtin_mlp(1)->params()));
}

// Given the same parameters, the scripted MLP computes what the built-in one
// does, bit for bit: loss, gradients and evaluation, step after step (the
// TorchScript executor may change its plan after the first runs).
TEST_F(TorchScriptModel, MatchesTheBuiltInMlpBitForBit) {
  auto script = load("mlp.pt");
  auto mlp = builtin_mlp(7);
  std::copy(mlp->params().begin(), mlp->params().end(), script->params().begin());
  const Dataset test_set = make_gaussian_clusters(300, 28 * 28, 10, 9);
  for (int step = 0; step < 6; ++step) {
    const Batch b = batch(step == 5 ? 7 : 32, 10 + static_cast<uint64_t>(step));  // a short last batch too
    const float expected = mlp->forward_backward(b);
    EXPECT_EQ(script->forward_backward(b), expected) << "step " << step;
    ASSERT_TRUE(same_bits(script->grads(), mlp->grads())) << "step " << step;
    for (auto* m : {mlp.get(), script.get()})
      for (size_t i = 0; i < m->params().size(); ++i) m->params()[i] -= 0.1f * m->grads()[i];
  }
  const Metrics a = script->evaluate(test_set), b = mlp->evaluate(test_set);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.accuracy, b.accuracy);
}

TEST_F(TorchScriptModel, TrainsThroughItsFlatBuffers) {
  auto model = load("mlp.pt");
  const Batch b = batch(64, 3);
  const float first = model->forward_backward(b);
  float last = first;
  for (int step = 0; step < 10; ++step) {
    for (size_t i = 0; i < model->params().size(); ++i) model->params()[i] -= 0.05f * model->grads()[i];
    last = model->forward_backward(b);
  }
  EXPECT_LT(last, 0.5f * first);
}

TEST_F(TorchScriptModel, ReportsEachGradientOnceWhenItIsFinal) {
  auto model = load("mlp.pt");
  std::vector<int> calls(model->layout().segments().size(), 0);
  ASSERT_TRUE(model->set_gradient_ready_hook([&](size_t s) { ++calls[s]; }));
  for (int step = 0; step < 3; ++step) model->forward_backward(batch(8, 2));
  for (int c : calls) EXPECT_EQ(c, 3);
}

TEST_F(TorchScriptModel, ALossMethodReplacesCrossEntropy) {
  auto own = load("with_loss.pt");
  auto plain = load("mlp.pt");
  std::copy(plain->params().begin(), plain->params().end(), own->params().begin());
  const Batch b = batch(16, 4);
  const float doubled = own->forward_backward(b);
  EXPECT_FLOAT_EQ(doubled, 2 * plain->forward_backward(b));
  for (size_t i = 0; i < own->grads().size(); i += 97) EXPECT_FLOAT_EQ(own->grads()[i], 2 * plain->grads()[i]);
}

TEST_F(TorchScriptModel, BadFilesAreOneLineErrorsNamingThePath) {
  std::ofstream(dir_->file("notes.txt")) << "not a model\n";
  std::filesystem::create_directory(dir_->file("a_directory"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"missing.pt", "no such file"},
      {"notes.txt", "not a TorchScript module"},
      {"a_directory", "not a regular file"},
  };
  for (const auto& [file, expected] : cases) {
    const std::string message = test::error_message([&] { load(file); });
    EXPECT_NE(message.find(dir_->file(file)), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  const std::string empty = test::error_message([] { TorchScriptOptions{}.make(ModelInput{{1, 28, 28}, 10, {}, 1}); });
  EXPECT_NE(empty.find("no path given"), std::string::npos) << empty;
}

TEST_F(TorchScriptModel, AMismatchedInputIsAOneLineError) {
  auto model = load("mlp.pt");
  Batch b = batch(4, 2);
  b.sample_shape = {1, 14, 56};  // 784 values still: fine
  model->forward_backward(b);
  const Dataset small = make_gaussian_clusters(4, 100, 10, 2);
  std::vector<size_t> all{0, 1, 2, 3};
  Batch wrong;
  wrong.gather(small, all);
  const std::string message = test::error_message([&] { model->forward_backward(wrong); });
  EXPECT_NE(message.find("model torchscript: "), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

}  // namespace
}  // namespace ptrain
