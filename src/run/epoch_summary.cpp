#include "run/epoch_summary.hpp"

#include <algorithm>
#include <cstring>

namespace ptrain {

EpochMetrics summarize_epoch(size_t epoch, double seconds, size_t batch,
                             const std::vector<std::vector<std::byte>>& losses, RunResult& result) {
  EpochMetrics m;
  m.epoch = epoch + 1;
  m.seconds = seconds;
  size_t longest = 0, total = 0;
  for (const auto& bytes : losses) {
    longest = std::max(longest, bytes.size() / sizeof(float));
    total += bytes.size() / sizeof(float);
  }
  m.steps = longest;
  m.samples_per_s = static_cast<double>(total * batch) / seconds;
  result.samples += total * batch;
  double sum = 0;
  for (size_t k = 0; k < longest; ++k) {
    float step_sum = 0;
    int count = 0;
    for (const auto& bytes : losses) {
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
