#pragma once
// The counts of a plan that no memory may hold, refused naming their fields
// once the data's shape is known and before any model is built: the model's
// size (an MLP's widths), the replicas the workers of this process keep, and
// their batches. Each is a lower bound of what the run needs (weights and
// gradients, the batch's samples), compared with the whole memory
// (core/memory_size.hpp), so what is refused can never run here. Before, such
// counts ended in std::bad_alloc (with a LibTorch stack trace) or the OOM
// killer, naming nothing.
#include "core/problems.hpp"
#include "model/model_input.hpp"
#include "plan/run_plan.hpp"

namespace ptrain {

// `workers_here`: the workers this process runs (all of them on threads, one
// under mpirun); `plan_model`: whether the plan's model is built (not a
// library caller's factory).
void check_memory(const RunPlan& plan, const ModelInput& input, int workers_here, bool plan_model,
                  Problems& problems);

}  // namespace ptrain
