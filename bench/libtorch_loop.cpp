// Plain single-process LibTorch peer for the ptrain throughput benchmark:
// trains the MLP 784-128-10 (ReLU, cross-entropy, Adam lr 1e-3) on
// Fashion-MNIST with one thread and prints one JSON line with samples/s.
#include <torch/torch.h>
#include <zlib.h>

#include <CLI/CLI.hpp>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/torch_models.hpp"

namespace {

constexpr int64_t kPixels = 28 * 28;

// The payload of a gzipped IDX file, its `header` bytes dropped.
std::vector<uint8_t> read_idx(const std::string& path, size_t header) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw std::runtime_error("cannot open " + path);
  std::vector<uint8_t> bytes;
  std::array<uint8_t, 1 << 16> chunk;
  int n = 0;
  while ((n = gzread(file, chunk.data(), chunk.size())) > 0)
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  gzclose(file);
  if (n < 0 || bytes.size() < header) throw std::runtime_error("cannot read " + path);
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(header));
  return bytes;
}


}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"LibTorch training-loop peer: MLP 784-128-10 on Fashion-MNIST, one thread"};
  int64_t batch = 64, steps = 500, warmup = 50;
  std::string data = "/usr/share/datasets/fashion-mnist";
  // Integer ranges: CLI11's PositiveNumber reports its bound as a 300-digit double.
  const auto at_least = [](int64_t low) { return CLI::Range(low, std::numeric_limits<int64_t>::max()); };
  app.add_option("--batch", batch, "batch size")->check(at_least(1));
  app.add_option("--steps", steps, "timed steps")->check(at_least(1));
  app.add_option("--warmup", warmup, "untimed steps first")->check(at_least(0));
  app.add_option("--data", data, "Fashion-MNIST directory")->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);

  try {
    ptrain::set_compute_threads(1);  // one LibTorch and one OpenBLAS thread, as each ptrain worker has
    torch::manual_seed(0);

    auto images = read_idx(data + "/train-images-idx3-ubyte.gz", 16);
    auto labels = read_idx(data + "/train-labels-idx1-ubyte.gz", 8);
    const auto n = static_cast<int64_t>(labels.size());
    if (n == 0 || images.size() != static_cast<size_t>(n * kPixels))
      throw std::runtime_error("image and label files in " + data + " do not match");
    // Preloaded once; from_blob only borrows the bytes, so convert (copy) right away.
    const auto x = torch::from_blob(images.data(), {n, kPixels}, torch::kUInt8).to(torch::kFloat32).div_(255);
    const auto y = torch::from_blob(labels.data(), {n}, torch::kUInt8).to(torch::kInt64);

    torch::nn::Sequential model(torch::nn::Linear(kPixels, 128), torch::nn::ReLU(),
                                torch::nn::Linear(128, 10));
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));

    auto step = [&] {
      const auto idx = torch::randint(n, {batch}, torch::kInt64);
      opt.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(model->forward(x.index_select(0, idx)),
                                                       y.index_select(0, idx));
      loss.backward();
      opt.step();
    };

    for (int64_t i = 0; i < warmup; ++i) step();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < steps; ++i) step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::printf(
        "{\"peer\":\"libtorch-loop\",\"workers\":1,\"batch\":%lld,\"steps\":%lld,\"seconds\":%.6f,\"samples_"
        "per_s\":%.2f}\n",
        static_cast<long long>(batch), static_cast<long long>(steps), seconds,
        static_cast<double>(batch * steps) / seconds);
  } catch (const std::exception& e) {
    // c10::Error's what() carries a backtrace; its first line is the message.
    std::string what = e.what();
    std::fprintf(stderr, "libtorch_loop: error: %s\n", what.substr(0, what.find('\n')).c_str());
    return 1;
  }
}
