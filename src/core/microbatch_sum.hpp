#pragma once
// How a batch is taken as M micro-batches and their gradients summed into
// the batch's, in one place for every part that does it (gradient
// accumulation, pipeline stages), so that they give the same bits.
#include <cstddef>
#include <span>

namespace ptrain {

// Micro-batch k of m holds samples [begin, end) of a batch of n.
struct MicrobatchRows {
  size_t begin = 0, end = 0;
  // Its weight in the batch's mean: its share of the samples.
  float share(size_t n) const { return static_cast<float>(end - begin) / static_cast<float>(n); }
};
inline MicrobatchRows microbatch_rows(size_t n, size_t m, size_t k) { return {k * n / m, (k + 1) * n / m}; }

// After an earlier micro-batch's backward: sum += share x its gradient.
inline void add_microbatch(std::span<float> sum, float share, std::span<const float> grad) {
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += share * grad[i];
}
// After the last one's: its gradient becomes the batch's, share x it plus the earlier ones' sum.
inline void fold_last_microbatch(std::span<float> grad, float share, std::span<const float> sum) {
  for (size_t i = 0; i < grad.size(); ++i) grad[i] = share * grad[i] + sum[i];
}

}  // namespace ptrain
