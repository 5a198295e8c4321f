#pragma once
// Deterministic per-worker sampling, in the style of PyTorch's DistributedSampler.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ptrain {

// DistributedSampler-style: every epoch the indices 0..n-1 are shuffled with a
// seed derived from (seed, epoch), the tail is dropped so the count divides by
// `workers`, and worker r takes positions r, r+workers, r+2*workers, ...
// Its batches are consecutive runs of `batch` of those (last partial batch dropped).
//
// Because the shuffle depends only on (n, seed, epoch), batch b of G workers
// with batch B together hold exactly batch b of one worker with batch G*B.
//
// A token stream (Dataset::stream) is read in order instead, as the word
// language-model recipe batches it: the n pieces are G*B rows of K = n/(G*B)
// consecutive pieces, worker r holds rows r*B .. r*B+B-1, and its batch k is
// piece k of each of its rows, so every row continues from one batch to the
// next (a recurrent model carries its state along it). The same holds: batch
// k of G workers with batch B is batch k of one worker with batch G*B.
enum class SampleOrder { Shuffled, Stream };

class ShardedSampler {
 public:
  // Throws ptrain::Error if workers == 0, rank >= workers, batch == 0 or
  // batch > shard_size(). Starts at epoch 0.
  ShardedSampler(size_t dataset_size, size_t workers, size_t rank, size_t batch, uint64_t seed,
                 SampleOrder order = SampleOrder::Shuffled);
  size_t shard_size() const;                      // samples this worker sees per epoch
  size_t batches_per_epoch() const;               // shard_size() / batch
  void start_epoch(size_t epoch);                 // reshuffle deterministically
  std::span<const size_t> batch(size_t b) const;  // indices of batch b of the current epoch

  size_t batch_size() const { return batch_; }
  size_t epoch() const { return epoch_; }

 private:
  size_t dataset_size_;
  SampleOrder sample_order_;
  size_t workers_;
  size_t rank_;
  size_t batch_;
  uint64_t seed_;
  size_t epoch_ = 0;
  std::vector<size_t> order_;  // the epoch's permutation of 0..n-1 (reused)
  std::vector<size_t> shard_;  // this worker's positions of it
};

}  // namespace ptrain
