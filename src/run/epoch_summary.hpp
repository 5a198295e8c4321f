#pragma once
// Worker 0's account of an epoch from every worker's losses.
#include <cstddef>
#include <vector>

#include "run/run_result.hpp"

namespace ptrain {

// The metrics of epoch `epoch` (0-based) from every worker's losses of it
// (as allgatherv hands them; under ssp and async as many as each took), its
// training time, the per-worker batch and the base batches each worker drew
// in it (one a step, but where a stale-gradient rule grew a step's), each
// batch taken by `shared_by` workers together (a pipeline's stages, whose
// first speaks for them; else 1). Adds the epoch's samples and time
// to `result`, and its step losses: the mean over the workers at each step,
// as float sums in rank order. The test figures are left to the caller.
EpochMetrics summarize_epoch(size_t epoch, double seconds, size_t batch, size_t shared_by,
                             const std::vector<std::vector<std::byte>>& losses,
                             const std::vector<uint64_t>& batches_drawn, RunResult& result);

}  // namespace ptrain
