#pragma once
// Where a pipeline cuts a model's layers into stages: S + 1 layer indices,
// stage s holding layers [cut[s], cut[s + 1]), every stage at least one.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace ptrain {

// Whether stage `stage` may hold layers [first, end): what a worker's memory
// limit allows (its state and activations grow with the layers, and under
// 1F1B with how early the stage is).
using StageFits = std::function<bool(size_t stage, size_t first, size_t end)>;

// The cut whose costliest stage costs least (costs: one per layer, >= 0)
// among those whose every stage `fits` (empty: every cut); among equal ones,
// the one whose earlier stages are the larger. Empty when no cut fits. Needs
// 1 <= stages <= costs.size().
std::vector<size_t> balanced_cut(const std::vector<double>& costs, size_t stages, const StageFits& fits = {});

// The cut a user gave: the first layer of each stage after the first
// (S - 1 increasing indices in (0, layers)). Throws ptrain::Error saying
// what is wrong with them.
std::vector<size_t> cut_at(const std::vector<int64_t>& boundaries, size_t layers, size_t stages);

}  // namespace ptrain
