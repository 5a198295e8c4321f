// A program of its own that trains its own model with ptrain: a small CNN with
// a residual connection, defined here as a torch::nn::Module, trained on
// Fashion-MNIST by 4 workers with hybrid all-reduce and Deep Gradient
// Compression, through the library's one entry point.
//   residual_cnn [--steps N] [--data DIR]
#include <ptrain/model/torch/torch_module_model.hpp>
#include <ptrain/ptrain.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <string>

// conv -> relu -> conv, plus the input (the residual), then pool and classify.
struct ResidualCnnImpl : torch::nn::Module {
  torch::nn::Conv2d stem{nullptr}, conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear head{nullptr};

  explicit ResidualCnnImpl(int64_t classes) {
    stem = register_module("stem", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3).padding(1)));
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1)));
    head = register_module("head", torch::nn::Linear(8 * 7 * 7, classes));
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(stem->forward(x));
    x = torch::relu(x + conv2->forward(torch::relu(conv1->forward(x))));  // the residual connection
    x = torch::max_pool2d(x, 4);
    return head->forward(x.flatten(1));
  }
};
TORCH_MODULE(ResidualCnn);

int main(int argc, char** argv) {
  size_t steps = 200;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::stoul(argv[i + 1]);
    if (std::strcmp(argv[i], "--data") == 0) data_dir = argv[i + 1];
  }
  try {
    ptrain::RunPlan plan;
    plan.data = ptrain::FashionMnistOptions{data_dir};
    plan.optimizer = ptrain::MomentumOptions{.lr = 0.05f, .momentum = 0.9f};
    ptrain::DgcOptions dgc;
    dgc.density = 0.01;
    plan.codec = dgc;                           // Deep Gradient Compression at 99%
    plan.strategy = ptrain::HybridOptions{};    // all-reduce, every replica the same update
    plan.run.workers = 4;
    plan.run.batch = 32;
    plan.run.max_steps = steps;

    ptrain::RunInputs inputs;
    inputs.model = ptrain::torch_module<ResidualCnn>(
        "residual-cnn", [](const ptrain::ModelInput& in) { return ResidualCnn(in.classes); });

    ptrain::World world = ptrain::make_world(plan);
    ptrain::RunCallbacks callbacks;
    callbacks.on_epoch_end = [](const ptrain::EpochMetrics& m) {
      std::printf("epoch %zu: train loss %.4f, test accuracy %.2f%%\n", m.epoch, m.train_loss, 100 * m.test_accuracy);
    };
    const ptrain::RunResult result = ptrain::run(plan, world, callbacks, inputs);
    ptrain::CodecStats codec;
    for (const auto& c : result.codec) codec += c;
    std::printf("residual-cnn: %zu parameters, %zu steps on %d workers, %.0f samples/s, "
                "test accuracy %.2f%%, compression %.1fx\n",
                result.parameters, result.steps, world.workers, result.samples_per_s,
                100 * result.epochs.back().test_accuracy, codec.ratio());
    // The model learned: well above the 10% of guessing.
    return result.epochs.back().test_accuracy > 0.5 ? 0 : 1;
  } catch (const ptrain::Error& e) {
    std::fprintf(stderr, "residual_cnn: error: %s\n", e.what());
    return 1;
  }
}
