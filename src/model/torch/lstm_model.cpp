// The LSTM language model (model/lstm_options.hpp) on flat buffers.
//
// Training carries each batch row's state to the next batch when that row's
// sample follows the one it held before (a token stream read in order, as
// data/sharded_sampler.hpp hands it out), and starts the row from zeros
// otherwise; the state is detached, so back-propagation stops at the batch's
// start (truncated BPTT). Dropout draws from the replica's own generator, not
// LibTorch's global one, so that workers on threads keep their bits.
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <optional>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/lstm_options.hpp"
#include "model/torch/flat_module.hpp"
#include "model/torch/torch_error.hpp"
#include "model/torch/torch_module_model.hpp"

namespace ptrain {

namespace {

constexpr uint64_t kDropoutStream = 0xD209'0075ull;

// Every layer's (h, c), each [1, rows, hidden].
struct RecurrentState {
  std::vector<torch::Tensor> h, c;
  bool defined() const { return !h.empty(); }
  int64_t rows() const { return defined() ? h[0].size(1) : 0; }
};

struct LstmNetImpl : torch::nn::Module {
  LstmNetImpl(int64_t vocabulary, const LstmOptions& o, uint64_t seed) : dropout(o.dropout) {
    namespace nn = torch::nn;
    encoder = register_module("encoder", nn::Embedding(vocabulary, o.embedding_size));
    for (int l = 0; l < o.layers; ++l)
      layers.push_back(register_module(
          fmt::format("lstm{}", l), nn::LSTM(nn::LSTMOptions(l == 0 ? o.embedding_size : o.hidden_size, o.hidden_size).batch_first(true))));
    torch::NoGradGuard no_grad;
    encoder->weight.uniform_(-0.1, 0.1);  // the recipe's initialisation
    if (!o.tie) decoder_weight = register_parameter("decoder_weight", torch::empty({vocabulary, o.hidden_size}).uniform_(-0.1, 0.1));
    decoder_bias = register_parameter("decoder_bias", torch::zeros({vocabulary}));
    generator = at::make_generator<at::CPUGeneratorImpl>(derive_seed(seed, kDropoutStream));
  }

  torch::Tensor dropped(const torch::Tensor& x) {
    if (!is_training() || dropout == 0) return x;
    const double keep = 1.0 - dropout;
    auto mask = torch::empty(x.sizes(), x.options().device(torch::kCPU)).bernoulli_(keep, generator).div_(keep);
    return x * mask.to(x.device());
  }

  // tokens [rows, T] -> logits [rows, T, vocabulary]; `state` in and out.
  torch::Tensor forward(const torch::Tensor& tokens, RecurrentState& state) {
    auto x = dropped(encoder->forward(tokens));
    RecurrentState next;
    for (size_t l = 0; l < layers.size(); ++l) {
      c10::optional<std::tuple<torch::Tensor, torch::Tensor>> start;
      if (state.defined()) start.emplace(state.h[l], state.c[l]);
      auto [out, hc] = layers[l]->forward(x, start);
      next.h.push_back(std::get<0>(hc));
      next.c.push_back(std::get<1>(hc));
      x = dropped(out);
    }
    state = std::move(next);
    return torch::linear(x, decoder_weight.defined() ? decoder_weight : encoder->weight, decoder_bias);
  }

  double dropout;
  torch::nn::Embedding encoder{nullptr};
  std::vector<torch::nn::LSTM> layers;
  torch::Tensor decoder_weight, decoder_bias;
  at::Generator generator;
};
TORCH_MODULE(LstmNet);

RecurrentState zeros(int64_t layers, int64_t rows, int64_t hidden, const torch::Device& device) {
  RecurrentState s;
  for (int64_t l = 0; l < layers; ++l) {
    s.h.push_back(torch::zeros({1, rows, hidden}, torch::TensorOptions().device(device)));
    s.c.push_back(torch::zeros({1, rows, hidden}, torch::TensorOptions().device(device)));
  }
  return s;
}

class LstmModel final : public Model {
 public:
  LstmModel(LstmNet net, const LstmOptions& options, const ComputeDevice& device)
      : net_(std::move(net)),
        options_(options),
        device_(torch_device(device)),
        flat_("lstm", net_.ptr(), [this](const torch::Tensor& x) { return forward_in_step(x); }, {}, device) {}

  std::string name() const override { return "lstm"; }
  const FlatLayout& layout() const override { return flat_.layout(); }
  std::span<float> params() override { return flat_.params(); }
  std::span<float> grads() override { return flat_.grads(); }
  bool set_gradient_ready_hook(GradientReadyHook hook) override { return flat_.set_gradient_ready_hook(std::move(hook)); }
  DeviceTraffic device_traffic() const override { return flat_.device_traffic(); }
  std::vector<int64_t> output_shape(const Batch& batch) override { return flat_.output_shape(batch); }

  float forward_backward(const Batch& batch) override {
    carry_state(batch);
    in_step_ = true;
    try {
      const float loss = flat_.forward_backward(batch);
      in_step_ = false;
      return loss;
    } catch (...) {
      in_step_ = false;
      state_ = {};
      throw;
    }
  }

  Metrics evaluate(const Dataset& data) override {
    try {
      return data.stream() ? evaluate_stream(data) : evaluate_samples(data);
    } catch (const Error&) {
      throw;
    } catch (const c10::Error& e) {
      throw Error("model lstm: " + torch_error_line(e));
    }
  }

  void save_state(StateWriter& out) const override {
    out.put_value("lstm.rows", static_cast<int64_t>(state_.rows()));
    for (size_t l = 0; l < state_.h.size(); ++l) {
      out.put(fmt::format("lstm.h{}", l), host_floats(state_.h[l]));
      out.put(fmt::format("lstm.c{}", l), host_floats(state_.c[l]));
    }
    out.put("lstm.last", last_);
    const torch::Tensor g = net_->generator.get_state();
    out.put("lstm.dropout_generator",
            std::span<const uint8_t>(g.data_ptr<uint8_t>(), static_cast<size_t>(g.numel())));
  }

  void load_state(StateReader& in) override {
    const auto rows = in.take_value<int64_t>("lstm.rows");
    RecurrentState s;
    if (rows > 0) s = zeros(options_.layers, rows, options_.hidden_size, torch::kCPU);
    for (size_t l = 0; l < s.h.size(); ++l) {
      in.take(fmt::format("lstm.h{}", l), std::span<float>(s.h[l].data_ptr<float>(), static_cast<size_t>(s.h[l].numel())));
      in.take(fmt::format("lstm.c{}", l), std::span<float>(s.c[l].data_ptr<float>(), static_cast<size_t>(s.c[l].numel())));
      s.h[l] = s.h[l].to(device_);
      s.c[l] = s.c[l].to(device_);
    }
    last_ = in.take_vector<size_t>("lstm.last");
    const std::vector<uint8_t> g = in.take_vector<uint8_t>("lstm.dropout_generator");
    const torch::Tensor expected = net_->generator.get_state();
    if (g.size() != static_cast<size_t>(expected.numel()))
      throw Error(fmt::format("{}: record 'lstm.dropout_generator' holds {} bytes, not a generator's {}", in.source(),
                              g.size(), expected.numel()));
    net_->generator.set_state(torch::from_blob(const_cast<uint8_t*>(g.data()), {static_cast<int64_t>(g.size())},
                                               torch::kUInt8).clone());
    state_ = std::move(s);
  }

 private:
  static std::vector<float> host_floats(const torch::Tensor& t) {
    const torch::Tensor h = t.to(torch::kCPU).contiguous();
    return {h.data_ptr<float>(), h.data_ptr<float>() + h.numel()};
  }

  // The rows whose sample follows the one they held keep their state; the others start from zeros.
  void carry_state(const Batch& batch) {
    const auto rows = static_cast<int64_t>(batch.size());
    if (!batch.stream || !state_.defined() || state_.rows() != rows || last_.size() != batch.indices.size()) {
      state_ = zeros(options_.layers, rows, options_.hidden_size, device_);
    } else {
      std::vector<float> keep(batch.size());
      bool all = true;
      for (size_t j = 0; j < keep.size(); ++j) {
        keep[j] = batch.indices[j] == last_[j] + 1 ? 1.0f : 0.0f;
        all = all && keep[j] == 1.0f;
      }
      if (!all) {
        const auto mask = torch::from_blob(keep.data(), {1, rows, 1}).to(device_);
        for (size_t l = 0; l < state_.h.size(); ++l) state_.h[l] = state_.h[l] * mask, state_.c[l] = state_.c[l] * mask;
      }
    }
    last_ = batch.indices;
  }

  // The forward the FlatModule runs: in a training step, from the carried
  // state (detached after: truncated BPTT); otherwise (a look at the output's
  // shape) from zeros, leaving the carried state alone.
  torch::Tensor forward_in_step(const torch::Tensor& tokens) {
    if (!in_step_) {
      RecurrentState fresh;
      return net_->forward(tokens, fresh);
    }
    auto out = net_->forward(tokens, state_);
    for (size_t l = 0; l < state_.h.size(); ++l) state_.h[l] = state_.h[l].detach(), state_.c[l] = state_.c[l].detach();
    return out;
  }

  // A stream is read as the recipe evaluates it: in stream_rows() rows
  // (core/dataset.hpp), each row's pieces in order with its state carried
  // from zeros at the start.
  Metrics evaluate_stream(const Dataset& data) {
    torch::NoGradGuard no_grad;
    flat_.load_parameters();
    net_->eval();
    const auto [rows, per_row] = stream_rows(data.size());
    const auto t = data.sample_shape()[0];
    const auto inputs = torch::from_blob(const_cast<float*>(data.features().data()),
                                         {static_cast<int64_t>(rows), static_cast<int64_t>(per_row), t});
    const auto targets = torch::from_blob(const_cast<int64_t*>(data.labels().data()),
                                          {static_cast<int64_t>(rows), static_cast<int64_t>(per_row), t}, torch::kInt64);
    RecurrentState state;
    double loss = 0;
    int64_t correct = 0;
    for (size_t k = 0; k < per_row; ++k) {
      const auto x = inputs.select(1, static_cast<int64_t>(k)).to(device_, torch::kInt64);
      const auto y = targets.select(1, static_cast<int64_t>(k)).to(device_);
      score(net_->forward(x, state), y, loss, correct);
    }
    net_->train();
    return Metrics::from_sums(loss, static_cast<size_t>(correct), rows * per_row, rows * per_row * static_cast<size_t>(t));
  }

  // Samples that are not a stream (a user's sequences): each from zeros.
  Metrics evaluate_samples(const Dataset& data) {
    torch::NoGradGuard no_grad;
    flat_.load_parameters();
    net_->eval();
    constexpr size_t kChunk = 64;
    double loss = 0;
    int64_t correct = 0;
    for (size_t start = 0; start < data.size(); start += kChunk) {
      const size_t n = std::min(kChunk, data.size() - start);
      const auto x = input_tensor(data.sample(start).data(), n, data.sample_shape(), Task::LanguageModel).to(device_);
      const auto y = label_tensor(data.targets(start).data(), n, data.label_shape()).to(device_);
      RecurrentState fresh;
      score(net_->forward(x, fresh), y, loss, correct);
    }
    net_->train();
    return Metrics::from_sums(loss, static_cast<size_t>(correct), data.size(), data.size() * data.label_numel());
  }

  static void score(const torch::Tensor& logits, const torch::Tensor& y, double& loss, int64_t& correct) {
    const auto flat = logits.reshape({-1, logits.size(-1)});
    loss += torch::nn::functional::cross_entropy(
                flat, y.reshape({-1}), torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                .item<double>();
    correct += flat.argmax(-1).eq(y.reshape({-1})).sum().item<int64_t>();
  }

  LstmNet net_;
  LstmOptions options_;
  torch::Device device_;
  RecurrentState state_;      // each training row's, carried between batches
  std::vector<size_t> last_;  // the samples the rows held last step
  bool in_step_ = false;
  FlatModule flat_;           // last: its forward calls into the members above
};

}  // namespace

// The TorchScript twin of LstmNet in evaluation: the same ATen operators
// (torch::nn::Embedding and LSTM call torch::embedding and torch::lstm with
// these arguments) over the parameters in its layout's order: the module's
// own (the decoder's) first, then the encoder's and each layer's.
ModelScript LstmOptions::script(const ModelInput&) const {
  ModelScript s;
  s.class_name = "Lstm";
  s.recurrent = true;
  if (!tie) s.parameters.push_back("decoder_weight");
  s.parameters.insert(s.parameters.end(), {"decoder_bias", "encoder_weight"});
  s.forward = fmt::format(
      "def forward(self, x: Tensor) -> Tensor:\n"
      "    x = torch.embedding(self.encoder_weight, x, -1, False, False)\n"
      "    zero = torch.zeros([1, x.size(0), {}], dtype=x.dtype, device=x.device)\n",
      hidden_size);
  for (int l = 0; l < layers; ++l) {
    std::vector<std::string> weights;
    for (const char* w : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"})
      weights.push_back(fmt::format("lstm{}_{}_l0", l, w));
    s.parameters.insert(s.parameters.end(), weights.begin(), weights.end());
    s.forward += fmt::format("    x, h, c = torch.lstm(x, [zero, zero], [self.{}], True, 1, 0.0, False, False, True)\n",
                             fmt::join(weights, ", self."));
  }
  s.forward += fmt::format("    return torch.linear(x, self.{}, self.decoder_bias)\n",
                           tie ? "encoder_weight" : "decoder_weight");
  return s;
}

std::unique_ptr<Model> LstmOptions::make(const ModelInput& input) const {
  if (input.label_shape.size() != 1 || input.sample_shape.size() != 1)
    throw Error("model lstm: a language model needs token sequences (samples of T token ids, a next token per "
                "position), as --data-set bible or npy language-modelling data give");
  if (tie && embedding_size != hidden_size)
    throw Error(fmt::format("model lstm: tie shares the embedding's weights with the decoder, so it needs "
                            "embedding_size = hidden_size (here {} and {})",
                            embedding_size, hidden_size));
  try {
    return seeded_torch_build(input.seed, [&] {
      LstmNet net(input.classes, *this, input.seed);
      return std::make_unique<LstmModel>(std::move(net), *this, input.device);
    });
  } catch (const c10::Error& e) {
    throw Error("model lstm: " + torch_error_line(e));
  }
}

}  // namespace ptrain
