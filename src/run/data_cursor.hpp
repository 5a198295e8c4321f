#pragma once
// Where a worker is in its shard of the data. Under ssp and async a fast
// worker takes more steps than an epoch's share: it goes on into its next pass.
#include <cstddef>
#include <span>

#include "data/sharded_sampler.hpp"

namespace ptrain {

class DataCursor {
 public:
  explicit DataCursor(ShardedSampler& sampler) : sampler_(sampler) { sampler_.start_epoch(0); }
  // Where a worker resumes that had taken `steps` steps (of a synchronous strategy).
  void seek(size_t steps) {
    pass_ = steps / sampler_.batches_per_epoch(), batch_ = steps % sampler_.batches_per_epoch();
    sampler_.start_epoch(pass_);
  }
  std::span<const size_t> next() {
    if (batch_ == sampler_.batches_per_epoch()) sampler_.start_epoch(++pass_), batch_ = 0;
    return sampler_.batch(batch_++);
  }

 private:
  ShardedSampler& sampler_;
  size_t pass_ = 0, batch_ = 0;
};

}  // namespace ptrain
