#pragma once
// Continuing a run from a checkpoint: the newest intact one in a directory,
// and whether this run's plan may go on from it. The state a checkpoint holds
// fixes the model, the data, the optimizer, the strategy, the codec, the
// workers, the batch and the seed; a resumed run may change only how long it
// runs, how it logs, times out and checkpoints, and where it saves the model.
#include <functional>
#include <string>

#include "core/problems.hpp"
#include "plan/run_plan.hpp"
#include "run/checkpoint_store.hpp"

namespace ptrain {

// The newest intact checkpoint in `dir`; each damaged one skipped is told to
// `skipped`. Throws ptrain::Error when there is none.
FoundCheckpoint newest_checkpoint(const std::string& dir, const std::function<void(const std::string&)>& skipped = {});

// The plan a checkpoint was taken with.
RunPlan checkpoint_plan(const FoundCheckpoint& found);

// Every field where `now` differs from `saved` in a way the state cannot
// follow, named as "strategy.name: the checkpoint's is hybrid, this run's sequential".
void check_resume(const RunPlan& saved, const RunPlan& now, Problems& problems);

}  // namespace ptrain
