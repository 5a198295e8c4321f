#include "run/checkpoint_writer.hpp"

#include <fmt/format.h>

namespace ptrain {

CheckpointWriter::CheckpointWriter(const CheckpointStore& store, int rank, int workers, uint64_t run,
                                   std::string plan_json, std::chrono::milliseconds timeout)
    : store_(store),
      rank_(rank),
      workers_(workers),
      run_(run),
      plan_json_(std::move(plan_json)),
      timeout_(timeout),
      thread_([this] { loop(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    stopped_at_ = std::chrono::steady_clock::now();
  }
  changed_.notify_all();
  thread_.join();
}

void CheckpointWriter::wait_idle(std::unique_lock<std::mutex>& lock) {
  changed_.wait(lock, [&] { return !job_ && !busy_; });
}

std::string CheckpointWriter::failure_at(uint64_t step, const std::exception& e) const {
  return fmt::format("checkpoint of step {} on worker {}: {}", step, rank_, e.what());
}

void CheckpointWriter::submit(uint64_t step, std::vector<std::byte> state) {
  std::unique_lock lock(mutex_);
  wait_idle(lock);
  if (!failure_.empty()) return;
  job_ = Job{step, std::move(state), false};
  changed_.notify_all();
}

std::string CheckpointWriter::write_part_now(uint64_t step, std::span<const std::byte> state) {
  // No wait for the flush of the one before (a disk may take longer than an
  // interval): it never touches a newer checkpoint's files.
  if (std::string failed = failure(); !failed.empty()) return failed;
  try {
    store_.write_part(step, run_, rank_, state, Flush::none);
  } catch (const std::exception& e) {
    return failure_at(step, e);
  }
  return {};
}

std::string CheckpointWriter::publish_now(uint64_t step) {
  try {
    // Every part is there (the workers said so): nothing to wait for.
    store_.publish(step, run_, plan_json_, store_.wait_for_parts(step, run_, workers_, std::chrono::milliseconds(0)));
  } catch (const std::exception& e) {
    return failure_at(step, e);
  }
  std::lock_guard lock(mutex_);
  ++committed_;
  // A flush not begun yet was for an older checkpoint: this one's stands for
  // it (that one stays until pruned, resumable but never flushed itself).
  job_ = Job{step, {}, true};
  changed_.notify_all();
  return {};
}

void CheckpointWriter::finish() {
  std::unique_lock lock(mutex_);
  wait_idle(lock);
}

std::string CheckpointWriter::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void CheckpointWriter::abandon() {
  std::unique_lock lock(mutex_);
  abandoned_ = true;
  if (job_ && !job_->flush_only) job_.reset();
  wait_idle(lock);
}

size_t CheckpointWriter::committed() const {
  std::lock_guard lock(mutex_);
  return committed_;
}

void CheckpointWriter::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return job_ || stopping_; });
    if (!job_) return;  // stopping, nothing in flight
    Job job = std::move(*job_);
    job_.reset();
    busy_ = true;
    lock.unlock();
    try {
      if (job.flush_only) {
        try {
          store_.make_durable(job.step, run_, workers_);
        } catch (const std::exception&) {
          store_.withdraw(job.step);  // not on disk: a resume takes the one before it
          throw;
        }
      } else {
        store_.write_part(job.step, run_, rank_, job.state);
        job.state = {};
        if (rank_ == 0) {
          // A worker that failed before handing its part over never will.
          const auto parts = store_.wait_for_parts(job.step, run_, workers_, timeout_, [this] {
            std::lock_guard stop(mutex_);
            return abandoned_ ||
                   (stopping_ && std::chrono::steady_clock::now() - stopped_at_ > std::chrono::seconds(5));
          });
          store_.commit(job.step, run_, plan_json_, parts);
        }
      }
      lock.lock();
      if (rank_ == 0 && !job.flush_only) ++committed_;
    } catch (const std::exception& e) {
      if (!lock.owns_lock()) lock.lock();
      if (failure_.empty()) failure_ = failure_at(job.step, e);
    }
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace ptrain
