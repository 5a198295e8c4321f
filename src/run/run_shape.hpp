#pragma once
// The length of a run, the same on every worker: steps per epoch (of each
// worker's shard of the data), steps in all, epochs, and the data-order seed.
#include <cstddef>
#include <cstdint>

#include "core/dataset.hpp"
#include "data/sharded_sampler.hpp"

namespace ptrain {

struct TrainConfig;

struct RunShape {
  uint64_t data_seed = 0;
  size_t steps_per_epoch = 0, total_steps = 0, epochs = 0;
};

// How a data set's samples are read: a token stream in order, the rest shuffled.
SampleOrder order_of(const Dataset& data);

RunShape run_shape(const TrainConfig& config, const Dataset& train_set);

// The shards the data is cut into and worker `rank`'s: one per worker, or
// one per pipeline, whose stages all read the same batches.
struct DataShard {
  size_t shards = 1, index = 0;
};
DataShard data_shard(const TrainConfig& config, int rank);

}  // namespace ptrain
