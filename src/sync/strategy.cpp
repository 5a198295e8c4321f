#include "sync/strategy.hpp"

#include "core/error.hpp"

namespace ptrain {

// The plan refuses checkpoints for a strategy without them (its options have no
// `checkpoints` trait), so these are reached only by a library caller who
// skipped the plan.
void WorkerStrategy::save_state(StateWriter&) { throw Error("this strategy does not write checkpoints"); }
void WorkerStrategy::load_state(StateReader&) { throw Error("this strategy does not resume from checkpoints"); }

}  // namespace ptrain
