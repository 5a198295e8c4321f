#pragma once
// A worker's memory against run.memory_limit: what it holds to train, as its
// strategy counts it (a pipeline stage: its own layers' state and the
// activations it keeps), or else its replica's parameters and gradients and
// the optimizer's state for all of them. Checked before the first step, and
// after it, once a pipeline stage has measured its activations.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model.hpp"
#include "optim/optimizer.hpp"
#include "sync/strategy.hpp"

namespace ptrain {

WorkerMemory memory_of(const WorkerStrategy& side, Model& replica, const OptimizerConfig& optimizer);

// Throws ptrain::Error "run.memory_limit: worker R holds ..." when `held` is
// over `limit` (0: no limit). `split`: whether the run already splits the
// model over its workers (else the message says how to); `trained`: after a
// step (before: "would hold").
void check_memory_limit(uint64_t limit, int rank, const WorkerMemory& held, bool split, bool trained);

// What the summary says of every worker's memory: the most any held, and the limit.
std::string memory_note(const std::vector<WorkerMemory>& workers, uint64_t limit);

}  // namespace ptrain
