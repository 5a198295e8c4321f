#pragma once
// The trained model of a run as a file (model/saved_model.hpp): a TorchScript
// module that Python's torch.jit.load runs on raw samples, and ptrain eval
// evaluates. run() writes it when the plan names a file (run.save_model,
// --save); a library user may also call save_model after run().
#include <string>

#include "core/problems.hpp"
#include "plan/run_plan.hpp"
#include "run/trainer.hpp"

namespace ptrain {

// Writes `result`'s final parameters (on the reporting process: rank 0's) as
// the plan's model, with the input preprocessing the run trained with and, in
// its ptrain.json, the plan, ptrain's version and the final test metrics.
// Atomic (core/atomic_file.hpp). Errors name run.save_model and the path.
void save_model(const std::string& path, const RunPlan& plan, const RunResult& result);

// What can be known before training about saving to plan.run.save_model (when
// set): the model has a TorchScript form, the build has LibTorch, the path can
// be written (its directory exists; nothing but a regular file is there).
// `caller_model`: the caller's factory builds the model (RunInputs::model),
// which has no TorchScript form. `writes`: this process writes the file (the
// path is checked only there: under mpirun, rank 0's host).
void check_save_model(const RunPlan& plan, bool caller_model, bool writes, Problems& problems);

}  // namespace ptrain
