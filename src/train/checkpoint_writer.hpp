#pragma once
// Writes a worker's checkpoints off the training path: the worker hands over
// its serialized state and trains on while this writer's thread seals it,
// writes it and flushes it to disk; worker 0's writer then waits for every
// worker's part to appear and commits the checkpoint with its manifest. One
// checkpoint is in flight per worker: handing over the next waits for the
// last. A checkpoint that fails (a full disk, a part that never came) is
// kept as this writer's failure, which the trainer asks after every step, so
// that every worker stops at the same step and the run ends with its
// checkpoints before that one intact.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/run_failure.hpp"
#include "train/checkpoint_store.hpp"

namespace ptrain {

// A checkpoint that could not be written or committed: the run stops, its
// checkpoints before this one intact.
class CheckpointFailed : public InterruptedError {
 public:
  using InterruptedError::InterruptedError;
};

class CheckpointWriter {
 public:
  // `run` tells this run's parts from a crashed one's; `timeout` bounds worker
  // 0's wait for the others' parts.
  CheckpointWriter(const CheckpointStore& store, int rank, int workers, uint64_t run, std::string plan_json,
                   std::chrono::milliseconds timeout);
  // Finishes what was handed over (a run that fails keeps its last
  // checkpoint), giving up on parts that do not come within a few seconds.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Hands over this worker's state at `step`, once the previous checkpoint is
  // written. After a failure nothing more is written: the state is dropped.
  void submit(uint64_t step, std::vector<std::byte> state);
  // Waits until everything handed over is written (and, on worker 0, committed).
  void finish();
  // The first checkpoint that failed, as one line ("": none), without waiting.
  std::string failure() const;
  // Worker 0 stops waiting for the others' parts; returns once this writer is idle.
  void abandon();
  // Checkpoints committed so far (worker 0's writer).
  size_t committed() const;

 private:
  void loop();
  void wait_idle(std::unique_lock<std::mutex>& lock);

  const CheckpointStore& store_;
  const int rank_, workers_;
  const uint64_t run_;
  const std::string plan_json_;
  const std::chrono::milliseconds timeout_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<std::pair<uint64_t, std::vector<std::byte>>> job_;
  bool busy_ = false, stopping_ = false, abandoned_ = false;
  std::chrono::steady_clock::time_point stopped_at_;
  std::string failure_;
  size_t committed_ = 0;
  std::thread thread_;
};

}  // namespace ptrain
