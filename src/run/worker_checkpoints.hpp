#pragma once
// A worker's checkpoints during a run (TrainConfig::checkpoint): when one is
// due, writing this worker's part (worker 0 commits every part with the
// manifest), telling of each commit, and stopping every worker at the same
// step when one fails.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "core/state_stream.hpp"
#include "core/stopwatch.hpp"
#include "run/checkpoint_store.hpp"
#include "run/checkpoint_writer.hpp"
#include "run/run_shape.hpp"
#include "run/worker_part.hpp"

namespace ptrain {

struct TrainConfig;
struct CheckpointDone;

class WorkerCheckpoints {
 public:
  // Every worker constructs it at the same point (they agree on the run's name
  // for its parts). Without a checkpoint directory it does nothing.
  WorkerCheckpoints(const TrainConfig& config, Communicator& comm, bool lockstep, bool with_servers,
                    std::function<void(const CheckpointDone&)> on_checkpoint);
  ~WorkerCheckpoints();
  WorkerCheckpoints(const WorkerCheckpoints&) = delete;
  WorkerCheckpoints& operator=(const WorkerCheckpoints&) = delete;

  // A checkpoint written in the background that failed ("": none).
  std::string failure() const;
  // Every worker, at the same step, after a checkpoint failed: worker 0
  // removes what it left and throws CheckpointFailed; the others wait for that.
  [[noreturn]] void stop_after_failure(const std::string& why);
  // Worker 0 tells of a commit once it sees it.
  void announce_commits();
  // Lockstep strategies, after each step inside an epoch of `epoch_steps`
  // (an epoch that --max-steps cuts short stays open in its checkpoint, so
  // that a longer run resumed from it completes it).
  void after_step(const WorkerPosition& at, size_t epoch_steps, const RunShape& shape,
                  const WorkerParts& parts);
  // At the end of a whole epoch, `at` naming the next; `left`: this worker left the run.
  void after_epoch(const WorkerPosition& at, bool left, const WorkerParts& parts);
  // The last checkpoint on disk and committed; returns how many were (worker 0's count).
  size_t finish();

 private:
  class Clock;
  // Every worker writes its part, then worker 0 commits them with the
  // manifest. `key` names the checkpoint: the step (lockstep), or all workers' steps.
  void write(const WorkerPosition& at, uint64_t key, const WorkerParts& parts);

  const TrainConfig& config_;
  Communicator& comm_;
  const bool lockstep_, with_servers_;
  std::function<void(const CheckpointDone&)> on_checkpoint_;
  std::unique_ptr<CheckpointStore> store_;
  std::unique_ptr<CheckpointWriter> writer_;
  std::unique_ptr<Clock> clock_;
  StateWriter part_;  // lockstep: kept between checkpoints, so that it does not grow again each time
  // One checkpoint is in flight at a time, so the commit counter says when that one is on disk.
  size_t announced_ = 0;
  size_t in_flight_step_ = 0;
  std::string in_flight_manifest_;
};

}  // namespace ptrain
