#include "core/pipeline_schedule.hpp"

#include <algorithm>

namespace ptrain {

std::vector<PipelinePass> pipeline_passes(PipelineSchedule schedule, size_t stage, size_t stages, size_t micro) {
  std::vector<PipelinePass> passes;
  passes.reserve(2 * micro);
  const size_t warmup = schedule == PipelineSchedule::GPipe ? micro : std::min(stages - stage - 1, micro);
  size_t forwards = 0, backwards = 0;
  for (; forwards < warmup; ++forwards) passes.push_back({true, forwards});
  for (; forwards < micro; ++forwards, ++backwards) {
    passes.push_back({true, forwards});
    passes.push_back({false, backwards});
  }
  for (; backwards < micro; ++backwards) passes.push_back({false, backwards});
  return passes;
}

size_t micro_batches_in_flight(const std::vector<PipelinePass>& passes) {
  size_t held = 0, most = 0;
  for (const PipelinePass& p : passes) {
    held = p.forward ? held + 1 : held - 1;
    most = std::max(most, held);
  }
  return most;
}

}  // namespace ptrain
