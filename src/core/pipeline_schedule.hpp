#pragma once
// The order in which one pipeline stage runs its micro-batches' forward and
// backward passes within a step. GPipe: every forward, then every backward.
// 1F1B: S - s - 1 forwards to fill the pipeline (stage s of S), then one
// forward and one backward in turn, then the backwards left, so that stage s
// holds at most S - s micro-batches' activations instead of all M. Either
// way each stage runs the backwards in micro-batch order, so its gradients
// are summed in the order one worker accumulating the micro-batches sums them.
#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include "core/fields.hpp"

namespace ptrain {

enum class PipelineSchedule { GPipe, OneForwardOneBackward };

template <>
struct EnumText<PipelineSchedule> {
  static constexpr std::array<std::string_view, 2> names = {"gpipe", "1f1b"};
};

struct PipelinePass {
  bool forward = true;
  size_t micro = 0;  // which micro-batch
  bool operator==(const PipelinePass&) const = default;
};

// Stage `stage` of `stages`, `micro` micro-batches: 2 x micro passes.
std::vector<PipelinePass> pipeline_passes(PipelineSchedule schedule, size_t stage, size_t stages, size_t micro);

// The most micro-batches whose activations `passes` holds at once.
size_t micro_batches_in_flight(const std::vector<PipelinePass>& passes);

}  // namespace ptrain
