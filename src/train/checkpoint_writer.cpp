#include "train/checkpoint_writer.hpp"

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

void CheckpointWriter::submit(uint64_t step, std::vector<std::byte> state) {
  std::unique_lock lock(mutex_);
  wait_idle(lock);
  if (!failure_.empty()) return;
  job_.emplace(step, std::move(state));
  changed_.notify_all();
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
  job_.reset();
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
    auto [step, state] = std::move(*job_);
    job_.reset();
    busy_ = true;
    lock.unlock();
    try {
      store_.write_part(step, run_, rank_, state);
      state = {};
      if (rank_ == 0) {
        // A worker that failed before handing its part over never will.
        const auto parts = store_.wait_for_parts(step, run_, workers_, timeout_, [this] {
          std::lock_guard stop(mutex_);
          return abandoned_ ||
                 (stopping_ && std::chrono::steady_clock::now() - stopped_at_ > std::chrono::seconds(5));
        });
        store_.commit(step, run_, plan_json_, parts);
      }
      lock.lock();
      if (rank_ == 0) ++committed_;
    } catch (const std::exception& e) {
      if (!lock.owns_lock()) lock.lock();
      if (failure_.empty())
        failure_ = fmt::format("checkpoint of step {} on worker {}: {}", step, rank_, e.what());
    }
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace ptrain
