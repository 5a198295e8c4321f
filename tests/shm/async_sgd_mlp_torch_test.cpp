// Every shared-memory algorithm trains the LibTorch MLP to the target loss on
// a small slice of the real Fashion-MNIST.
#include <gtest/gtest.h>

#include "data/fashion_mnist.hpp"
#include "model/torch/model_factory.hpp"
#include "shm/async_sgd.hpp"
#include "shm_strategy_configs.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

TEST(AsyncSgdMlp, EveryAlgorithmTrainsTheMlpToTheTarget) {
  set_compute_threads(1);
  const Dataset data = load_fashion_mnist(test::kFashionMnistDir, Split::Train).head(2000);
  ModelConfig model;
  model.hidden = {64, 64};
  model.init_seed = 3;
  const ReplicaFactory factory = [&] { return make_model(model, data.sample_shape(), data.num_classes()); };
  for (const std::string& algorithm : test::shm_strategies()) {
    SCOPED_TRACE(std::string(algorithm));
    ShmConfig c;
    test::set_algorithm(c, algorithm);
    c.threads = c.algorithm == "seq" ? 1 : 2;
    c.batch = 16;
    c.optimizer.lr = 0.05f;
    c.epochs = 6;
    c.check_every = 25;
    c.target_loss = 0.7;
    const AsyncSgdResult r = run_async_sgd(c, data, data, factory);
    EXPECT_EQ(r.stopped_by, "target");
    EXPECT_LE(r.final_loss, 0.7);
    EXPECT_GT(r.checks.front().loss, 2.0);
    EXPECT_EQ(r.staleness.total(), r.totals.applied);
  }
}

}  // namespace
}  // namespace ptrain
