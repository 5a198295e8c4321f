// Samples/s of ptrain's hybrid training of the MLP on Fashion-MNIST, for the
// side-by-side benchmark with a plain LibTorch loop and PyTorch DDP
// (bench/hybrid_vs_peers.sh). Prints one JSON line like its peers.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "data/fashion_mnist.hpp"
#include "model/model_registry.hpp"
#include "plan/strategy_registry.hpp"
#include "run/trainer.hpp"

int main(int argc, char** argv) {
  CLI::App app{"hybrid_throughput: samples/s of ptrain hybrid training on the MLP"};
  int workers = 1;
  size_t batch = 64, steps = 500, warmup = 50;
  std::string strategy = "hybrid", data = ptrain::kDefaultFashionMnistDir;
  bool pin = true, overlap = true;
  app.add_option("--workers", workers)->capture_default_str();
  app.add_option("--batch", batch, "per worker")->capture_default_str();
  app.add_option("--steps", steps)->capture_default_str();
  app.add_option("--warmup", warmup)->capture_default_str();
  app.add_option("--strategy", strategy)->capture_default_str();
  app.add_option("--data", data)->capture_default_str();
  app.add_flag("--pin,!--no-pin", pin, "place worker r on core r (run.placement compact)")->capture_default_str();
  app.add_flag("--overlap,!--no-overlap", overlap, "hybrid: all-reduce buckets while backward runs")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (steps == 0) {
    fmt::print(stderr, "hybrid_throughput: error: --steps must be at least 1\n");
    return 1;
  }
  try {
    ptrain::set_compute_threads(1);
    const ptrain::Dataset train_set = ptrain::load_fashion_mnist(data, ptrain::Split::Train);
    ptrain::TrainConfig config;
    config.workers = workers;
    config.batch = batch;
    auto chosen = ptrain::StrategyRegistry::make(strategy);
    if (!chosen) throw ptrain::Error("--strategy: " + ptrain::StrategyRegistry::unknown("strategy", strategy));
    if (auto* hybrid = std::get_if<ptrain::HybridOptions>(&*chosen)) hybrid->overlap = overlap;
    config.make_strategy = ptrain::strategy_factory_of(*chosen);
    if (pin) config.placer = ptrain::Placer(ptrain::Topology::load(""), ptrain::Placement::Compact);
    config.epochs = 1000000;  // --steps decides the length, across epoch boundaries
    config.strategy.optimizer.kind = ptrain::OptimizerKind::Adam;
    auto factory = [&](int) { return ptrain::make_model({"mlp", {128}, 1}, train_set.sample_shape(), 10); };
    if (warmup > 0) {  // warm caches and allocators, as the peers do
      config.max_steps = warmup;
      ptrain::train(config, train_set, nullptr, factory);
    }
    config.max_steps = steps;
    const ptrain::RunResult r = ptrain::train(config, train_set, nullptr, factory);
    fmt::print(
        "{{\"peer\":\"ptrain-{}\",\"workers\":{},\"batch\":{},\"steps\":{},\"seconds\":{:.4f},\"samples_per_"
        "s\":{:.1f}}}\n",
        strategy, workers, batch, steps, r.train_seconds, r.samples_per_s);
  } catch (const ptrain::Error& e) {
    fmt::print(stderr, "hybrid_throughput: error: {}\n", e.what());
    return 1;
  }
}
