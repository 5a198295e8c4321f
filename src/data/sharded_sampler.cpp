#include "data/sharded_sampler.hpp"

#include <numeric>
#include <string>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace ptrain {
namespace {

// Keeps the data-order seeds apart from other streams derived from the same seed.
constexpr uint64_t kDataOrderStream = 0x5A4D'504C'4552ull;

}  // namespace

ShardedSampler::ShardedSampler(size_t dataset_size, size_t workers, size_t rank, size_t batch, uint64_t seed,
                               SampleOrder order)
    : dataset_size_(dataset_size), sample_order_(order), workers_(workers), rank_(rank), batch_(batch), seed_(seed) {
  if (workers == 0) throw Error("sampler: the number of workers must be at least 1");
  if (rank >= workers)
    throw Error("sampler: worker rank " + std::to_string(rank) + " is out of range for " +
                std::to_string(workers) + " workers");
  if (batch == 0) throw Error("run.batch must be at least 1");
  if (order == SampleOrder::Stream && shard_size() == 0)
    throw Error("run.batch " + std::to_string(batch) + ": a stream of " + std::to_string(dataset_size) +
                " pieces read as " + std::to_string(workers) + " workers x " + std::to_string(batch) +
                " rows leaves no piece to a row");
  if (batch > shard_size())
    throw Error("run.batch " + std::to_string(batch) + " is larger than each worker's shard of " +
                std::to_string(shard_size()) + " samples (" + std::to_string(dataset_size) +
                " samples over " + std::to_string(workers) + " workers)");
  start_epoch(0);
}

size_t ShardedSampler::shard_size() const {
  if (sample_order_ == SampleOrder::Stream) return batch_ == 0 ? 0 : dataset_size_ / (workers_ * batch_) * batch_;
  return dataset_size_ / workers_;
}

size_t ShardedSampler::batches_per_epoch() const { return shard_size() / batch_; }

void ShardedSampler::start_epoch(size_t epoch) {
  epoch_ = epoch;
  if (sample_order_ == SampleOrder::Stream) {  // the same every epoch: batch k, row j is piece k of row r*B + j
    const size_t per_row = dataset_size_ / (workers_ * batch_);
    shard_.resize(per_row * batch_);
    for (size_t k = 0; k < per_row; ++k)
      for (size_t j = 0; j < batch_; ++j) shard_[k * batch_ + j] = (rank_ * batch_ + j) * per_row + k;
    return;
  }
  order_.resize(dataset_size_);
  std::iota(order_.begin(), order_.end(), size_t{0});
  Rng rng(derive_seed(derive_seed(seed_, kDataOrderStream), epoch));
  rng.shuffle(std::span<size_t>(order_));
  shard_.resize(shard_size());
  for (size_t k = 0; k < shard_.size(); ++k) shard_[k] = order_[rank_ + k * workers_];
}

std::span<const size_t> ShardedSampler::batch(size_t b) const {
  if (b >= batches_per_epoch())
    throw Error("sampler: batch " + std::to_string(b) + " is out of range; an epoch has " +
                std::to_string(batches_per_epoch()) + " batches");
  return std::span<const size_t>(shard_).subspan(b * batch_, batch_);
}

}  // namespace ptrain
