// the model contract is not classification-only. A sequence model
// (an embedding and a linear layer over it, defined here as a LibTorch module)
// trained through run() on token sequences: the task's loss is cross-entropy
// at every position and its figure is perplexity, which falls toward the
// language's own.
#include <gtest/gtest.h>

#include <torch/script.h>

#include <cmath>

#include "data/synthetic.hpp"
#include "model/saved_model.hpp"
#include "model/torch/torch_module_model.hpp"
#include "run/run.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

// [B, T] token ids -> [B, T, V] logits for the next token.
struct BigramImpl : torch::nn::Module {
  torch::nn::Embedding embed{nullptr};
  torch::nn::Linear out{nullptr};
  explicit BigramImpl(int64_t vocabulary) {
    embed = register_module("embed", torch::nn::Embedding(vocabulary, 16));
    out = register_module("out", torch::nn::Linear(16, vocabulary));
  }
  torch::Tensor forward(const torch::Tensor& tokens) { return out->forward(embed->forward(tokens)); }
};
TORCH_MODULE(Bigram);

TEST(LanguageModel, PerplexityFallsTowardTheLanguagesOwn) {
  constexpr int kVocabulary = 20;
  const Dataset all = make_token_sequences(1500, 12, kVocabulary, 4, 0.1f);
  RunPlan plan;
  plan.data_controls.standardize = false;  // token ids stay ids
  plan.optimizer = AdamOptions{.lr = 0.02f};
  plan.run.workers = 2;
  plan.run.batch = 16;
  plan.run.epochs = 3;
  plan.run.placement = Placement::None;
  RunInputs inputs;
  inputs.model = torch_module<Bigram>("bigram", [](const ModelInput& in) { return Bigram(in.classes); });
  inputs.data = LoadedData{all.head(1200), all};
  World world = make_world(plan);
  const RunResult r = run(plan, world, {}, inputs);
  ASSERT_EQ(r.task, Task::LanguageModel);
  ASSERT_EQ(r.epochs.size(), 3u);
  // Guessing: perplexity 20. The language: the successor with probability 0.9 + 0.1/20, else uniform,
  // whose entropy gives a perplexity of about 1.6.
  const double first = r.epochs.front().test_perplexity, last = r.epochs.back().test_perplexity;
  EXPECT_LT(last, first);
  EXPECT_LT(last, 2.5) << first;
  EXPECT_NEAR(last, std::exp(r.epochs.back().test_loss), 1e-9);
  EXPECT_GT(r.epochs.back().test_accuracy, 0.8);  // the next token, right 90% of the time at best
}

// The same bigram model as a TorchScript module (as from Python), trained
// through run() and saved (--save): the file takes token ids and scores the
// test set as training did.
TEST(LanguageModel, ASavedTorchScriptModelScoresWhatTrainingReported) {
  constexpr int kVocabulary = 20;
  test::ScratchDir dir;
  torch::jit::Module bigram(c10::QualifiedName("__torch__.Bigram"), std::make_shared<torch::jit::CompilationUnit>(),
                            true);
  bigram.register_attribute("training", c10::BoolType::get(), true);
  torch::manual_seed(2);
  bigram.register_parameter("embed", torch::randn({kVocabulary, 16}).requires_grad_(true), false);
  bigram.register_parameter("w", (0.1 * torch::randn({kVocabulary, 16})).requires_grad_(true), false);
  bigram.register_parameter("b", torch::zeros({kVocabulary}).requires_grad_(true), false);
  bigram.define(R"(
def forward(self, x: Tensor) -> Tensor:
    return torch.linear(torch.embedding(self.embed, x), self.w, self.b)
)");
  bigram.save(dir.file("bigram.pt"));
  const Dataset all = make_token_sequences(600, 12, kVocabulary, 4, 0.1f);
  RunPlan plan;
  plan.model = TorchScriptOptions{dir.file("bigram.pt")};
  plan.optimizer = AdamOptions{.lr = 0.02f};
  plan.run.workers = 2;
  plan.run.batch = 16;
  plan.run.epochs = 1;
  plan.run.placement = Placement::None;
  plan.run.save_model = dir.file("saved.pt");
  RunInputs inputs;
  inputs.data = LoadedData{all.head(480), all};
  World world = make_world(plan);
  const RunResult r = run(plan, world, {}, inputs);
  ASSERT_EQ(r.task, Task::LanguageModel);
  EXPECT_FALSE(r.standardization);  // token ids are never standardised

  SavedModel saved = load_saved_model(dir.file("saved.pt"));
  EXPECT_EQ(saved.facts.task(), Task::LanguageModel);
  EXPECT_EQ(saved.facts.label_shape, std::vector<int64_t>{12});
  EXPECT_EQ(saved.facts.classes, kVocabulary);
  const Metrics m = saved.model->evaluate(all);
  EXPECT_EQ(m.loss, r.epochs.back().test_loss);
  EXPECT_EQ(m.accuracy, r.epochs.back().test_accuracy);
  EXPECT_EQ(m.targets, all.size() * 12);
  // As a Python user calls it: int64 token ids in, next-token logits out.
  torch::jit::Module file = torch::jit::load(dir.file("saved.pt"));
  const auto ids = torch::randint(kVocabulary, {3, 12}, torch::kInt64);
  EXPECT_EQ(file.forward({ids}).toTensor().sizes(), (std::vector<int64_t>{3, 12, kVocabulary}));
}

}  // namespace
}  // namespace ptrain
