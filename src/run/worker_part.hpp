#pragma once
// A worker's part of a checkpoint: what it records of itself between steps,
// and where it goes on from when a run resumes.
#include <cstddef>
#include <vector>

#include "comm/communicator.hpp"
#include "core/model.hpp"
#include "core/state_stream.hpp"
#include "run/run_result.hpp"
#include "run/run_shape.hpp"
#include "sync/strategy.hpp"

namespace ptrain {

struct TrainConfig;

// Where a worker is in its run.
struct WorkerPosition {
  size_t step = 0;            // its steps over the run
  size_t batches = 0;         // the base batches it drew over the run (a step may take several)
  size_t epoch = 0;           // the epoch it is in (0-based; a part taken at an epoch's end names the next)
  std::vector<float> losses;  // its losses of that epoch so far
  double epoch_seconds = 0;   // that epoch's training time so far
};

// What a part holds besides the position.
struct WorkerParts {
  Model& replica;
  WorkerStrategy& side;
  RunResult* result = nullptr;  // worker 0's, what it gathered so far (null on the others)
  int rank = 0;
};

void write_worker_part(StateWriter& out, const WorkerPosition& at, const WorkerParts& parts);

// This worker's position in config.resume, its replica, strategy and result
// loaded from its part; checked against the run's shape, and under a lockstep
// strategy against the other workers' steps (every worker calls it).
WorkerPosition resume_worker(const TrainConfig& config, const RunShape& shape, Communicator& comm,
                             const WorkerParts& parts);

}  // namespace ptrain
