#include "run/epoch_summary.hpp"

#include <algorithm>
#include <cstring>
#include <span>

namespace ptrain {

EpochMetrics summarize_epoch(size_t epoch, double seconds, size_t batch, size_t shared_by,
                             const std::vector<std::vector<std::byte>>& losses,
                             const std::vector<uint64_t>& batches_drawn, RunResult& result) {
  EpochMetrics m;
  m.epoch = epoch + 1;
  m.seconds = seconds;
  // A pipeline's stages all report its loss: one of them speaks for it.
  std::vector<std::span<const std::byte>> own;
  for (size_t r = 0; r < losses.size(); r += shared_by) own.push_back(losses[r]);
  size_t longest = 0, total = 0;
  for (const auto bytes : own) {
    longest = std::max(longest, bytes.size() / sizeof(float));
    total += bytes.size() / sizeof(float);
  }
  m.steps = longest;
  size_t drawn = 0;
  for (size_t r = 0; r < batches_drawn.size(); r += shared_by) drawn += batches_drawn[r];
  const size_t samples = drawn * batch;
  m.samples_per_s = static_cast<double>(samples) / seconds;
  result.samples += samples;
  double sum = 0;
  for (size_t k = 0; k < longest; ++k) {
    float step_sum = 0;
    int count = 0;
    for (const auto bytes : own) {
      if ((k + 1) * sizeof(float) > bytes.size()) continue;
      float l;
      std::memcpy(&l, bytes.data() + k * sizeof(float), sizeof l);
      step_sum = count == 0 ? l : step_sum + l;
      ++count;
    }
    sum += step_sum;
    result.step_losses.push_back(step_sum / static_cast<float>(count));
  }
  m.train_loss = total > 0 ? sum / static_cast<double>(total) : 0;
  result.train_seconds += m.seconds;
  return m;
}

}  // namespace ptrain
