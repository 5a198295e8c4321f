#pragma once
// Where a pipeline cuts a model's layers into stages: S + 1 layer indices,
// stage s holding layers [cut[s], cut[s + 1]), every stage at least one.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ptrain {

// The cut whose costliest stage costs least (costs: one per layer, >= 0);
// among equal ones, the one whose earlier stages are the larger. Needs
// 1 <= stages <= costs.size().
std::vector<size_t> balanced_cut(const std::vector<double>& costs, size_t stages);

// The cut a user gave: the first layer of each stage after the first
// (S - 1 increasing indices in (0, layers)). Throws ptrain::Error saying
// what is wrong with them.
std::vector<size_t> cut_at(const std::vector<int64_t>& boundaries, size_t layers, size_t stages);

}  // namespace ptrain
