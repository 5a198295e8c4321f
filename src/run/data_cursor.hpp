#pragma once
// Where a worker is in its shard of the data, in base batches (--batch
// samples each). Under ssp and async a fast worker takes more steps than an
// epoch's share: it goes on into its next pass. A step may take several base
// batches at once (a stale-gradient rule's larger batch): the samples come in
// the same order however the steps group them.
#include <cstddef>
#include <span>
#include <vector>

#include "data/sharded_sampler.hpp"

namespace ptrain {

class DataCursor {
 public:
  explicit DataCursor(ShardedSampler& sampler) : sampler_(sampler) { sampler_.start_epoch(0); }
  // Where a worker resumes that had drawn `batches` base batches.
  void seek(size_t batches) {
    taken_ = batches;
    pass_ = batches / sampler_.batches_per_epoch(), batch_ = batches % sampler_.batches_per_epoch();
    sampler_.start_epoch(pass_);
  }
  // The next `count` base batches' sample indices, one after the other.
  std::span<const size_t> next(size_t count = 1) {
    if (count == 1) return next_one();
    joined_.clear();
    for (size_t i = 0; i < count; ++i) {
      const auto one = next_one();
      joined_.insert(joined_.end(), one.begin(), one.end());
    }
    return joined_;
  }
  size_t taken() const { return taken_; }  // base batches drawn since the run began

 private:
  std::span<const size_t> next_one() {
    if (batch_ == sampler_.batches_per_epoch()) sampler_.start_epoch(++pass_), batch_ = 0;
    ++taken_;
    return sampler_.batch(batch_++);
  }

  ShardedSampler& sampler_;
  size_t pass_ = 0, batch_ = 0, taken_ = 0;
  std::vector<size_t> joined_;
};

}  // namespace ptrain
