#include "model/torch_models.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "model/blas_check.hpp"
#include "model/torch/flat_module.hpp"
#include "model/torch/torch_module_model.hpp"

namespace ptrain {

namespace {

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

torch::nn::Sequential make_mlp(const std::vector<int64_t>& hidden, int64_t inputs, int64_t classes) {
  torch::nn::Sequential net{torch::nn::Flatten()};
  int64_t width = inputs;
  for (int64_t h : hidden) {
    if (h <= 0) throw Error("model mlp: hidden widths must be positive (got " + std::to_string(h) + ")");
    net->push_back(torch::nn::Linear(width, h));
    net->push_back(torch::nn::ReLU());
    width = h;
  }
  net->push_back(torch::nn::Linear(width, classes));
  return net;
}

// Two conv+pool blocks and two fully connected layers, for {C, H, W} images.
torch::nn::Sequential make_cnn(const std::vector<int64_t>& shape, int64_t classes) {
  if (shape.size() != 3 || shape[1] < 4 || shape[2] < 4)
    throw Error("model cnn: needs image samples of shape {channels, height, width} of at least 4x4");
  namespace nn = torch::nn;
  const int64_t h = shape[1] / 2 / 2, w = shape[2] / 2 / 2;
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(shape[0], 16, 5).padding(2)), nn::ReLU(),
                        nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(16, 32, 5).padding(2)), nn::ReLU(),
                        nn::MaxPool2d(2), nn::Flatten(), nn::Linear(32 * h * w, 128), nn::ReLU(),
                        nn::Linear(128, classes));
}

}  // namespace

std::mutex& torch_init_mutex() {
  static std::mutex m;
  return m;
}

std::unique_ptr<Model> MlpOptions::make(const ModelInput& input) const {
  return seeded_torch_build(input.seed, [&] {
    return std::make_unique<FlatModule>("mlp", make_mlp(hidden, product(input.sample_shape), input.classes),
                                        input.device);
  });
}

std::unique_ptr<Model> CnnOptions::make(const ModelInput& input) const {
  return seeded_torch_build(input.seed,
                            [&] {
    return std::make_unique<FlatModule>("cnn", make_cnn(input.sample_shape, input.classes), input.device);
  });
}

// The TorchScript twins of make_mlp and make_cnn: the same ATen operators in
// the same order (torch::nn's Flatten, Linear, ReLU, Conv2d and MaxPool2d call
// exactly these), over the parameters in the Sequential's order, so a saved
// model computes the bits the trained one did (tests/model/saved_model_torch_test.cpp).
ModelScript MlpOptions::script(const ModelInput&) const {
  ModelScript s;
  s.class_name = "Mlp";
  s.forward = "def forward(self, x: Tensor) -> Tensor:\n    x = x.flatten(1)\n";
  for (size_t layer = 0; layer <= hidden.size(); ++layer) {
    s.parameters.push_back(fmt::format("fc{}_weight", layer));
    s.parameters.push_back(fmt::format("fc{}_bias", layer));
    const std::string linear = fmt::format("torch.linear(x, self.fc{0}_weight, self.fc{0}_bias)", layer);
    s.forward +=
        layer < hidden.size() ? "    x = torch.relu(" + linear + ")\n" : "    return " + linear + "\n";
  }
  return s;
}

ModelScript CnnOptions::script(const ModelInput&) const {
  ModelScript s;
  s.class_name = "Cnn";
  s.parameters = {"conv0_weight", "conv0_bias", "conv1_weight", "conv1_bias",
                  "fc0_weight",   "fc0_bias",   "fc1_weight",   "fc1_bias"};
  s.forward = R"(def forward(self, x: Tensor) -> Tensor:
    x = torch.relu(torch.conv2d(x, self.conv0_weight, self.conv0_bias, [1, 1], [2, 2], [1, 1], 1))
    x = torch.max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], False)
    x = torch.relu(torch.conv2d(x, self.conv1_weight, self.conv1_bias, [1, 1], [2, 2], [1, 1], 1))
    x = torch.max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], False)
    x = x.flatten(1)
    x = torch.relu(torch.linear(x, self.fc0_weight, self.fc0_bias))
    return torch.linear(x, self.fc1_weight, self.fc1_bias)
)";
  return s;
}

void set_compute_threads(int n) {
  torch::set_num_threads(n);
  set_openblas_threads(n);
}

}  // namespace ptrain
