#pragma once
// One worker's whole run on its communicator, whatever the backend: resuming,
// its epochs of steps, checkpoints, worker 0's evaluation, the votes on
// whether the run goes on, and the run's totals gathered to worker 0.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "comm/communicator.hpp"
#include "core/dataset.hpp"
#include "core/model.hpp"
#include "core/stopwatch.hpp"
#include "core/timeline.hpp"
#include "data/sharded_sampler.hpp"
#include "run/data_cursor.hpp"
#include "run/run_result.hpp"
#include "run/run_shape.hpp"
#include "run/stop_vote.hpp"
#include "run/worker_checkpoints.hpp"
#include "run/worker_part.hpp"
#include "sync/strategy.hpp"

namespace ptrain {

struct TrainConfig;
struct TrainCallbacks;

class WorkerLoop {
 public:
  // `with_servers` (parameter servers) joins the workers to the shards.
  // Worker 0 fills `result`.
  WorkerLoop(const TrainConfig& config, const RunShape& shape, const Dataset& train_set,
             const Dataset* test_set, Model& replica, StrategyGroup& strategy, Communicator& comm,
             Communicator* with_servers, const TrainCallbacks& callbacks, RunResult& result);
  ~WorkerLoop();
  WorkerLoop(const WorkerLoop&) = delete;
  WorkerLoop& operator=(const WorkerLoop&) = delete;

  // `began` is set once the input is accepted: what fails after it is the run's.
  void run(bool& began);

 private:
  void train_epoch(size_t epoch_steps);
  void take_step(size_t epoch_steps, double& running);
  std::string stop_after_step(float loss);
  void diverge(const std::string& why);
  void report_progress(size_t epoch_steps, double running) const;
  bool end_epoch(size_t epoch_steps);
  void record_epoch(EpochMetrics m, const std::optional<Metrics>& test);
  // Against run.memory_limit (run/memory_limit.hpp).
  void check_memory() const;
  WorkerStatus status() const;
  void finish();
  void gather_totals();
  double epoch_seconds() const { return seconds_before_ + epoch_clock_.seconds(); }
  // The position a checkpoint records, with what the clock and the cursor say now.
  const WorkerPosition& position();
  WorkerParts parts();

  const TrainConfig& config_;
  const RunShape& shape_;
  const Dataset& train_set_;
  const Dataset* test_set_;
  Model& replica_;
  Communicator& comm_;
  Communicator* with_servers_;
  const TrainCallbacks& callbacks_;
  RunResult& result_;
  const int rank_, workers_;
  TimelineThread timeline_;
  std::unique_ptr<Model> microbatches_;  // wraps the replica when each step takes several micro-batches
  std::unique_ptr<Model> straggler_;     // wraps that on the straggling worker
  Model& model_;                         // what the strategy trains: the outermost of these
  std::unique_ptr<WorkerStrategy> side_;
  ShardedSampler sampler_;
  DataCursor cursor_;
  size_t epoch_batches_ = 0;  // base batches drawn in this epoch
  Batch batch_;
  WorkerPosition position_;
  double seconds_before_ = 0;  // of this epoch, before a resume
  Stopwatch epoch_clock_;
  std::unique_ptr<WorkerCheckpoints> checkpoints_;
  uint64_t saturated_ = 0;  // gradient values the codecs saturated so far
  bool stepped_ = false;    // took a step in this run (resumed or not)
  bool left_ = false;       // this worker stopped taking steps (it diverged, or left an async run)
  std::string left_why_;
  WorkerStatus diverged_;     // Diverged or DivergedAndLeft once this worker diverged
  WorkerStatus test_status_;  // worker 0: TestDiverged once the test loss is not finite
};

}  // namespace ptrain
