// Issue 14: the model contract is not classification-only. A sequence model
// (an embedding and a linear layer over it, defined here as a LibTorch module)
// trained through run() on token sequences: the task's loss is cross-entropy
// at every position and its figure is perplexity, which falls toward the
// language's own.
#include <gtest/gtest.h>

#include <cmath>

#include "data/synthetic.hpp"
#include "model/torch/torch_module_model.hpp"
#include "run/run.hpp"

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
  plan.run.pin = false;
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

}  // namespace
}  // namespace ptrain
