#include "run/run_shape.hpp"

#include <algorithm>
#include <cmath>

#include "core/rng.hpp"
#include "run/trainer.hpp"

namespace ptrain {

namespace {
constexpr uint64_t kDataOrderStream = 1;
}  // namespace

SampleOrder order_of(const Dataset& data) {
  return data.stream() ? SampleOrder::Stream : SampleOrder::Shuffled;
}

DataShard data_shard(const TrainConfig& config, int rank) {
  const int per_shard = std::max(config.pipeline_stages, 1);
  return {static_cast<size_t>(config.workers / per_shard), static_cast<size_t>(rank / per_shard)};
}

RunShape run_shape(const TrainConfig& config, const Dataset& train_set) {
  RunShape shape;
  shape.data_seed = derive_seed(config.seed, kDataOrderStream);
  shape.steps_per_epoch = ShardedSampler(train_set.size(), data_shard(config, 0).shards, 0, config.batch,
                                         shape.data_seed, order_of(train_set))
                              .batches_per_epoch();
  shape.total_steps =
      config.epochs > 0
          ? std::max<size_t>(1, static_cast<size_t>(
                                    std::llround(config.epochs * static_cast<double>(shape.steps_per_epoch))))
          : 0;
  if (config.max_steps > 0 && (shape.total_steps == 0 || config.max_steps < shape.total_steps))
    shape.total_steps = config.max_steps;
  shape.epochs = (shape.total_steps + shape.steps_per_epoch - 1) / shape.steps_per_epoch;
  return shape;
}

}  // namespace ptrain
