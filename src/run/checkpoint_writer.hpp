#pragma once
// Writes a worker's checkpoints, keeping the slow part off the training path,
// in one of two ways.
//
// Lockstep strategies (every worker at the same step between steps): each
// worker writes its part at once, renamed into place but not flushed
// (write_part_now); once the workers agree that every part is there, worker 0
// writes the manifest the same way (publish_now). The checkpoint is then
// resumable after a kill of the process, before any worker takes the next
// step, so a kill loses at most one interval. Worker 0's writer thread then
// flushes the parts, the manifest and the directory to disk, and only then
// removes older checkpoints, so that one on disk is always kept. Training
// does not wait for a flush: when checkpoints come faster than the disk
// flushes them, the thread flushes the newest when it is free, skipping those
// in between.
//
// The others (their workers never wait for each other between steps): the
// worker hands over its serialized state and trains on while this writer's
// thread seals it, writes it and flushes it; worker 0's writer then waits for
// every worker's part to appear and commits the checkpoint with its manifest.
//
// On that path one checkpoint is in flight per worker: the next waits for
// the last. Either way a checkpoint that fails (a full disk, a flush that failed, a part that never
// came) is kept as this writer's failure, which the trainer asks after every
// step, so that every worker stops at the same step and the run ends with its
// checkpoints before that one intact.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/run_failure.hpp"
#include "run/checkpoint_store.hpp"

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
  // Lockstep: writes this worker's part at `step` now (unflushed). Returns
  // the failure as one line ("": none; after a failure nothing is written).
  std::string write_part_now(uint64_t step, std::span<const std::byte> state);
  // Lockstep, worker 0, once every worker's part at `step` is written: the
  // manifest now (unflushed), and the flushes handed to this writer's thread.
  // Returns the failure as one line ("": none).
  std::string publish_now(uint64_t step);
  // Waits until everything handed over is written (and, on worker 0, committed).
  void finish();
  // The first checkpoint that failed, as one line ("": none), without waiting.
  std::string failure() const;
  // Worker 0 stops waiting for the others' parts (a flush still goes on);
  // returns once this writer is idle.
  void abandon();
  // Checkpoints committed (lockstep: published) so far (worker 0's writer).
  size_t committed() const;

 private:
  void loop();
  void wait_idle(std::unique_lock<std::mutex>& lock);
  std::string failure_at(uint64_t step, const std::exception& e) const;

  const CheckpointStore& store_;
  const int rank_, workers_;
  const uint64_t run_;
  const std::string plan_json_;
  const std::chrono::milliseconds timeout_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  // A state to write and commit (submit), or a published checkpoint to flush (flush_only).
  struct Job {
    uint64_t step = 0;
    std::vector<std::byte> state;
    bool flush_only = false;
  };
  std::optional<Job> job_;
  bool busy_ = false, stopping_ = false, abandoned_ = false;
  std::chrono::steady_clock::time_point stopped_at_;
  std::string failure_;
  size_t committed_ = 0;
  std::thread thread_;
};

}  // namespace ptrain
