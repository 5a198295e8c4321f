// Plain single-thread LibTorch peer for the LSTM throughput benchmark
// (bench/lstm_vs_peers.sh): the word language model of --model lstm
// (embedding, LSTM layers, dropout, linear decoder; momentum SGD 0.9, lr 1)
// trained on ptrain's own --data-set bible stream, batched exactly as ptrain
// batches a stream for one worker, with the state carried between batches.
// Prints one JSON line with tokens/s. --dump-tokens writes the training
// stream as .npy so that bench/lstm_peer.py reads the same tokens.
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/bible_corpus.hpp"
#include "model/torch_models.hpp"

namespace {


// A 1-D int64 .npy (format 1.0), so that the Python peer needs no parser of ours.
void write_npy(const std::string& path, const std::vector<int64_t>& values) {
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (" + std::to_string(values.size()) + ",), }";
  const size_t prefix = 10;  // magic (6), version (2), header length (2)
  header.append(63 - (prefix + header.size()) % 64, ' ');  // the data starts 64-byte aligned
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  const uint16_t length = static_cast<uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  const char length_bytes[2] = {static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
  out.write(length_bytes, 2);
  out << header;
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(int64_t)));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// The --model lstm network, as the word language-model recipe builds it.
struct LstmNetImpl : torch::nn::Module {
  LstmNetImpl(int64_t vocabulary, int64_t embedding, int64_t hidden, int64_t layers, double dropout) {
    namespace nn = torch::nn;
    encoder = register_module("encoder", nn::Embedding(vocabulary, embedding));
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(embedding, hidden)
                                                .num_layers(layers)
                                                .dropout(layers > 1 ? dropout : 0.0)
                                                .batch_first(true)));
    drop = register_module("drop", nn::Dropout(dropout));
    decoder = register_module("decoder", nn::Linear(hidden, vocabulary));
    torch::NoGradGuard no_grad;
    encoder->weight.uniform_(-0.1, 0.1);
    decoder->weight.uniform_(-0.1, 0.1);
    decoder->bias.zero_();
  }

  // tokens [B, T] -> logits [B, T, vocabulary]; `state` (h, c), each [L, B, H], in and out.
  torch::Tensor forward(const torch::Tensor& tokens, c10::optional<std::tuple<torch::Tensor, torch::Tensor>>& state) {
    auto [out, hc] = lstm->forward(drop->forward(encoder->forward(tokens)), state);
    state = hc;
    return decoder->forward(drop->forward(out));
  }

  torch::nn::Embedding encoder{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::Linear decoder{nullptr};
};
TORCH_MODULE(LstmNet);

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"LibTorch training-loop peer: the --model lstm language model on --data-set bible, one thread"};
  int64_t batch = 20, bptt = 35, embedding = 128, hidden = 128, layers = 2, steps = 200, warmup = 0;
  int vocabulary = 5000;
  double dropout = 0.2;
  std::string dump_tokens;
  // Integer ranges: CLI11's PositiveNumber reports its bound as a 300-digit double.
  const auto at_least = [](int64_t low) { return CLI::Range(low, std::numeric_limits<int64_t>::max()); };
  app.add_option("--batch", batch, "rows per batch")->check(at_least(1));
  app.add_option("--bptt", bptt, "tokens per row per step")->check(at_least(1));
  app.add_option("--embedding", embedding, "embedding width")->check(at_least(1));
  app.add_option("--hidden", hidden, "hidden width of each LSTM layer")->check(at_least(1));
  app.add_option("--layers", layers, "LSTM layers")->check(at_least(1));
  app.add_option("--vocabulary", vocabulary, "words kept (--data-set bible's --vocabulary)")->check(CLI::Range(3, 1 << 30));
  app.add_option("--dropout", dropout, "dropout after the embedding, between and after the LSTM layers")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--steps", steps, "timed steps")->check(at_least(1));
  app.add_option("--warmup", warmup, "untimed steps first (0: time from the first step, as ptrain's tokens/s does)")
      ->check(at_least(0));
  app.add_option("--dump-tokens", dump_tokens, "write the training token ids to this .npy file (int64, 1-D)");
  CLI11_PARSE(app, argc, argv);

  try {
    ptrain::set_compute_threads(1);  // one LibTorch and one OpenBLAS thread, as each ptrain worker has
    torch::manual_seed(0);

    ptrain::BibleOptions corpus;
    corpus.vocabulary = vocabulary;
    const ptrain::Dataset train = corpus.load().train;
    const auto features = train.features();
    const auto labels = train.labels();
    const auto n = static_cast<int64_t>(labels.size());  // input tokens; labels are the next ones

    if (!dump_tokens.empty()) {
      std::vector<int64_t> tokens(features.begin(), features.end());
      tokens.push_back(labels.back());
      write_npy(dump_tokens, tokens);
    }

    // As ptrain reads a stream with one worker: the stream cut into pieces of
    // T tokens, row j = pieces [j*K, (j+1)*K), batch k = piece k of every row.
    const int64_t per_row = n / bptt / batch;
    if (per_row == 0) throw std::runtime_error("the stream is too short for this batch and bptt");
    const int64_t used = batch * per_row * bptt;
    std::vector<float> inputs_f(features.begin(), features.begin() + used);
    const auto inputs = torch::from_blob(inputs_f.data(), {batch, per_row, bptt}).to(torch::kInt64);
    const auto targets = torch::from_blob(const_cast<int64_t*>(labels.data()), {batch, per_row, bptt}, torch::kInt64)
                             .clone();

    LstmNet model(train.num_classes(), embedding, hidden, layers, dropout);
    model->train();
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(1.0).momentum(0.9));

    c10::optional<std::tuple<torch::Tensor, torch::Tensor>> state;
    int64_t k = 0;
    auto step = [&] {
      if (k == per_row) k = 0, state.reset();  // a new epoch: the rows start over, from zeros
      const auto x = inputs.select(1, k).contiguous();
      const auto y = targets.select(1, k).contiguous();
      ++k;
      opt.zero_grad();
      const auto logits = model->forward(x, state);
      state = std::make_tuple(std::get<0>(*state).detach(), std::get<1>(*state).detach());  // truncated BPTT
      auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
      loss.backward();
      opt.step();
    };

    for (int64_t i = 0; i < warmup; ++i) step();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < steps; ++i) step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    int64_t parameters = 0;
    for (const auto& p : model->parameters()) parameters += p.numel();
    std::printf(
        "{\"peer\":\"libtorch\",\"workers\":1,\"batch\":%lld,\"bptt\":%lld,\"steps\":%lld,\"warmup\":%lld,"
        "\"parameters\":%lld,\"seconds\":%.6f,\"tokens_per_s\":%.2f,\"samples_per_s\":%.2f}\n",
        static_cast<long long>(batch), static_cast<long long>(bptt), static_cast<long long>(steps),
        static_cast<long long>(warmup), static_cast<long long>(parameters), seconds,
        static_cast<double>(batch * bptt * steps) / seconds, static_cast<double>(batch * steps) / seconds);
  } catch (const std::exception& e) {
    // c10::Error's what() carries a backtrace; its first line is the message.
    std::string what = e.what();
    std::fprintf(stderr, "lstm_loop: error: %s\n", what.substr(0, what.find('\n')).c_str());
    return 1;
  }
}
