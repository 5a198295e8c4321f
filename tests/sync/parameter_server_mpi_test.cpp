// The parameter server with its workers and shards as MPI ranks: the last
// S = 1 (or 2 from 6 ranks on) ranks serve, the others train. ps-sync must
// give the bits of the same run on threads; async must apply every gradient.
#include <gtest/gtest.h>

#include "test_support.hpp"

#include "comm/mpi_communicator.hpp"
#include "test_models.hpp"
#include "run/trainer.hpp"

namespace ptrain {
namespace {

TrainConfig config_for(const std::string& strategy, int workers, int servers) {
  TrainConfig c;
  c.workers = workers;
  c.batch = 8;
  c.epochs = 2;
  c.seed = 5;
  c.make_strategy = test::named_strategy(strategy, servers);
  c.strategy.optimizer.lr = 0.01f;
  c.comm_timeout = std::chrono::seconds(60);
  return c;
}

TEST(MpiParameterServer, RanksTrainWhatThreadsTrain) {
  MpiCommunicator world(std::chrono::seconds(60));
  if (world.size() < 2) GTEST_SKIP() << "needs a worker and a shard";
  const int servers = world.size() >= 6 ? 2 : 1, workers = world.size() - servers;
  const bool serving = world.rank() >= workers;
  auto mine = world.split(serving ? 1 : 0);
  const Dataset data = make_gaussian_clusters(480, 6, 3, 2);
  for (const char* strategy : {"ps-sync", "async"}) {
    const TrainConfig c = config_for(strategy, workers, servers);
    if (serving) {
      serve_on(world, c, data, test::softmax_factory(data));
      continue;
    }
    const RunResult r = train_on(*mine, world, c, data, &data, test::softmax_factory(data));
    if (world.rank() != 0) continue;
    ASSERT_EQ(r.servers.size(), static_cast<size_t>(servers));
    uint64_t pushed = 0;
    for (size_t s : r.worker_steps) pushed += s;
    EXPECT_EQ(r.servers[0].applied(), pushed) << strategy;
    EXPECT_EQ(r.epochs.size(), 2u);
    if (std::string(strategy) == "ps-sync") {
      const RunResult threads = train(c, data, &data, test::softmax_factory(data));
      EXPECT_EQ(r.final_params, threads.final_params);
      EXPECT_EQ(r.step_losses, threads.step_losses);
    }
  }
}

}  // namespace
}  // namespace ptrain
