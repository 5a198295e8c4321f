// A library user's own torch::nn::Module as a ptrain model (torch_module()):
// shared weights bound once, gradients as LibTorch's own, and a residual CNN
// trained through run() with hybrid all-reduce and DGC.
#include "model/torch/torch_module_model.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "data/synthetic.hpp"
#include "run/run.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

namespace nn = torch::nn;

// One Linear applied twice, registered under two names: LibTorch lists its
// weight and bias twice, but they are one parameter each.
struct TiedImpl : nn::Module {
  nn::Linear shared{nullptr}, head{nullptr};
  TiedImpl(int64_t inputs, int64_t classes) {
    shared = register_module("first", nn::Linear(inputs, inputs));
    register_module("second", shared);
    head = register_module("head", nn::Linear(inputs, classes));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = torch::relu(shared->forward(x.flatten(1)));
    h = torch::tanh(shared->forward(h));
    return head->forward(h);
  }
};
TORCH_MODULE(Tied);

// conv -> relu -> conv, plus the skip, then pool and a linear layer.
struct ResidualCnnImpl : nn::Module {
  nn::Conv2d stem{nullptr}, conv1{nullptr}, conv2{nullptr};
  nn::Linear head{nullptr};
  ResidualCnnImpl(const std::vector<int64_t>& shape, int64_t classes) {
    stem = register_module("stem", nn::Conv2d(nn::Conv2dOptions(shape[0], 4, 3).padding(1)));
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding(1)));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding(1)));
    head = register_module("head", nn::Linear(4 * (shape[1] / 2) * (shape[2] / 2), classes));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(stem->forward(x));
    x = torch::relu(x + conv2->forward(torch::relu(conv1->forward(x))));  // the residual connection
    return head->forward(torch::max_pool2d(x, 2).flatten(1));
  }
};
TORCH_MODULE(ResidualCnn);

ModelMaker tied_maker(LossFunction loss = {}) {
  return torch_module<Tied>("tied", [](const ModelInput& in) { return Tied(in.sample_shape[0], in.classes); },
                            std::move(loss));
}

// Gaussian clusters as 1x8x8 images.
LoadedData images(size_t train, size_t test) {
  const Dataset flat = make_gaussian_clusters(train + test, 64, 4, 17, 2.0f);
  auto part = [&](size_t from, size_t n) {
    std::vector<float> features(flat.features().begin() + static_cast<std::ptrdiff_t>(from * 64),
                                flat.features().begin() + static_cast<std::ptrdiff_t>((from + n) * 64));
    std::vector<int64_t> labels(flat.labels().begin() + static_cast<std::ptrdiff_t>(from),
                                flat.labels().begin() + static_cast<std::ptrdiff_t>(from + n));
    return Dataset("clusters-8x8", {1, 8, 8}, std::move(features), std::move(labels), 4);
  };
  return {part(0, train), part(train, test)};
}

TEST(TorchModule, ASharedLinearIsBoundOnce) {
  const ModelInput input{{16}, 5, {}, 3};
  auto model = tied_maker()(input);
  auto& flat = dynamic_cast<FlatModule&>(*model);
  EXPECT_EQ(flat.module()->named_parameters().size(), 6u);  // LibTorch: first.*, second.*, head.*
  ASSERT_EQ(model->layout().segments().size(), 4u);
  EXPECT_EQ(model->params().size(), 16u * 16u + 16u + 5u * 16u + 5u);
  EXPECT_EQ(model->layout().segments()[0].name, "first.weight");
  // Both names point to one tensor, and it lives in the flat buffer.
  const auto named = flat.module()->named_parameters();
  EXPECT_EQ(named["first.weight"].data_ptr<float>(), model->params().data());
  EXPECT_EQ(named["second.weight"].data_ptr<float>(), model->params().data());
}

TEST(TorchModule, SameSeedSameInitialWeights) {
  auto a = tied_maker()({{16}, 5, {}, 3});
  auto b = tied_maker()({{16}, 5, {}, 3});
  auto c = tied_maker()({{16}, 5, {}, 4});
  EXPECT_TRUE(std::equal(a->params().begin(), a->params().end(), b->params().begin()));
  EXPECT_FALSE(std::equal(a->params().begin(), a->params().end(), c->params().begin()));
}

// The gradient in the flat buffer is LibTorch's own on an unbound copy: the
// shared weight's is the sum over both of its uses.
TEST(TorchModule, SharedWeightGradientIsLibTorchsOwn) {
  const ModelInput input{{16}, 5, {}, 3};
  const Dataset data = make_gaussian_clusters(32, 16, 5, 8);
  const Batch batch = test::first_samples(data, 32);
  for (int with_own_loss = 0; with_own_loss < 2; ++with_own_loss) {
    LossFunction loss;
    if (with_own_loss)  // a loss of the user's: label smoothing by hand
      loss = [](const torch::Tensor& out, const torch::Tensor& labels) {
        auto logp = torch::log_softmax(out, 1);
        return -(0.9 * logp.gather(1, labels.unsqueeze(1)).squeeze(1) + 0.1 * logp.mean(1)).mean();
      };
    else
      loss = [](const torch::Tensor& out, const torch::Tensor& labels) {
        return torch::nn::functional::cross_entropy(out, labels);
      };
    auto model = tied_maker(with_own_loss ? loss : LossFunction{})(input);
    Tied reference = seeded_torch_build(input.seed, [&] { return Tied(16, 5); });
    const float got = model->forward_backward(batch);
    auto x = torch::from_blob(const_cast<float*>(batch.features.data()), {32, 16}).clone();
    auto y = torch::from_blob(const_cast<int64_t*>(batch.labels.data()), {32}, torch::kInt64).clone();
    auto ref_loss = loss(reference->forward(x), y);
    ref_loss.backward();
    EXPECT_EQ(got, ref_loss.item<float>());
    const auto named = reference->named_parameters();
    for (const auto& seg : model->layout().segments()) {
      auto ref_grad = named[seg.name].grad().contiguous();
      const auto g = model->grads().subspan(seg.offset, seg.numel);
      ASSERT_EQ(std::memcmp(g.data(), ref_grad.data_ptr<float>(), seg.numel * sizeof(float)), 0)
          << seg.name << (with_own_loss ? " (own loss)" : "");
    }
  }
}

TEST(TorchModule, EachSharedGradientIsReportedOnceWhenFinal) {
  auto model = tied_maker()({{16}, 5, {}, 3});
  const Batch batch = test::first_samples(make_gaussian_clusters(8, 16, 5, 8), 8);
  std::vector<int> calls(model->layout().segments().size(), 0);
  ASSERT_TRUE(model->set_gradient_ready_hook([&](size_t s) { ++calls[s]; }));
  model->forward_backward(batch);
  for (int c : calls) EXPECT_EQ(c, 1);
}

TEST(TorchModule, EvaluateSumsTheLossFunctionAndCountsTheArgmax) {
  const ModelInput input{{16}, 5, {}, 3};
  const Dataset data = make_gaussian_clusters(40, 16, 5, 8);
  auto plain = tied_maker()(input);
  auto own = tied_maker([](const torch::Tensor& out, const torch::Tensor& labels) {
    return torch::nn::functional::cross_entropy(out, labels);
  })(input);
  const Metrics a = plain->evaluate(data), b = own->evaluate(data);
  EXPECT_EQ(a.samples, 40u);
  EXPECT_NEAR(a.loss, b.loss, 1e-5);
  EXPECT_EQ(a.accuracy, b.accuracy);
}

TEST(TorchModule, ATorchErrorIsOneLine) {
  auto model = tied_maker()({{16}, 5, {}, 3});
  const Dataset wrong = make_gaussian_clusters(4, 12, 5, 8);  // 12 features, not 16
  const std::string message = test::error_message([&] { model->forward_backward(test::first_samples(wrong, 4)); });
  EXPECT_NE(message.find("model tied: "), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

RunResult train_residual(const LoadedData& data) {
  RunPlan plan;
  plan.data_controls.standardize = false;
  plan.optimizer = MomentumOptions{.lr = 0.05f, .momentum = 0.9f};
  DgcOptions dgc;
  dgc.density = 0.05;
  plan.codec = dgc;
  plan.strategy = HybridOptions{};
  plan.run.workers = 2;
  plan.run.batch = 16;
  plan.run.epochs = 2;
  plan.run.placement = Placement::None;
  RunInputs inputs;
  inputs.model = torch_module<ResidualCnn>(
      "residual-cnn", [](const ModelInput& in) { return ResidualCnn(in.sample_shape, in.classes); });
  inputs.data = data;
  World world = make_world(plan);
  return run(plan, world, {}, inputs);
}

TEST(TorchModule, AResidualCnnTrainsThroughRunWithHybridAndDgc) {
  const LoadedData data = images(640, 200);
  const RunResult a = train_residual(data);
  EXPECT_EQ(a.model, "residual-cnn");
  EXPECT_EQ(a.parameters, (1u * 4 * 9 + 4) + 2 * (4u * 4 * 9 + 4) + (4u * 4 * 4 * 4 + 4));  // stem, conv1, conv2, head
  ASSERT_EQ(a.epochs.size(), 2u);
  ASSERT_FALSE(a.step_losses.empty());
  EXPECT_LT(a.epochs.back().train_loss, 0.5 * a.step_losses.front());  // it learns
  EXPECT_GT(a.epochs.back().test_accuracy, 0.8);                       // chance: 1/4
  EXPECT_GT(a.codec.front().ratio(), 1.0);                             // DGC did compress
  const RunResult b = train_residual(data);
  EXPECT_EQ(a.final_params, b.final_params);  // deterministic, bit for bit
  EXPECT_EQ(a.step_losses, b.step_losses);
}

}  // namespace
}  // namespace ptrain
