#include "sync/synchronous_coordinator.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace ptrain {

SynchronousCoordinator::SynchronousCoordinator(int workers, int backup, size_t steps_per_epoch,
                                               size_t total_steps, double time_limit_seconds)
    : workers_(workers),
      backup_(backup),
      steps_per_epoch_(steps_per_epoch),
      total_steps_(total_steps),
      target_(std::min(steps_per_epoch, total_steps)),
      begun_(static_cast<size_t>(workers), 0),
      last_accepted_(static_cast<size_t>(workers), -1),
      stopped_(static_cast<size_t>(workers), false),
      budget_(time_limit_seconds) {}

PsDecision SynchronousCoordinator::stop(size_t worker, uint64_t received) {
  stopped_[worker] = true;
  if (std::all_of(stopped_.begin(), stopped_.end(), [](bool s) { return s; })) budget_.epoch_ends();
  PsDecision decision;
  decision.received = received;
  decision.over = over_ ? 1 : 0;
  return decision;
}

std::optional<PsDecision> SynchronousCoordinator::begin(int worker) {
  const auto w = static_cast<size_t>(worker);
  if (std::all_of(stopped_.begin(), stopped_.end(), [](bool s) { return s; })) {
    stopped_.assign(stopped_.size(), false);  // everyone heard the last epoch end: the next begins
    target_ = std::min<uint64_t>(target_ + steps_per_epoch_, total_steps_);
  }
  budget_.epoch_begins();
  // Decided before anyone hears this epoch end, so that every worker hears the same.
  const bool none_stopped = std::none_of(stopped_.begin(), stopped_.end(), [](bool s) { return s; });
  if (!over_ && none_stopped && (budget_.spent() || stop_requested_)) {
    // Cut the epoch where every worker can still agree: after the steps some
    // worker has begun (ps-sync), or after the open version (ps-backup).
    over_ = true;
    target_ = backup_ == 0 ? *std::max_element(begun_.begin(), begun_.end()) : closed_ + (accepted_ > 0 ? 1 : 0);
  }
  PsDecision decision;
  if (backup_ == 0) {
    // Lockstep: the worker's k-th step needs version k, which takes every worker's gradient for k - 1.
    if (begun_[w] >= target_) return stop(w, target_ * static_cast<uint64_t>(workers_));
    decision.go = 1;
    decision.version = begun_[w]++;
    return decision;
  }
  // A worker whose gradient was chosen waits until its version is complete.
  if (last_accepted_[w] >= static_cast<int64_t>(closed_)) return std::nullopt;
  if (closed_ >= target_) return stop(w, expected_);
  decision.go = 1;
  decision.version = closed_;
  return decision;
}

bool SynchronousCoordinator::claim(int worker, uint64_t version) {
  if (version != closed_ || closed_ >= target_) {
    dropped_late_++;  // its version already has its W - b gradients
    return false;
  }
  last_accepted_[static_cast<size_t>(worker)] = static_cast<int64_t>(version);
  expected_++;
  if (++accepted_ == static_cast<uint64_t>(workers_ - backup_)) {
    closed_++;
    accepted_ = 0;
  }
  return true;
}

namespace {
std::vector<uint8_t> as_bytes(const std::vector<bool>& flags) { return {flags.begin(), flags.end()}; }
}  // namespace

void SynchronousCoordinator::save_state(StateWriter& out) const {
  out.put("coordinator.begun", begun_);
  out.put_value("coordinator.closed", closed_);
  out.put_value("coordinator.accepted", accepted_);
  out.put_value("coordinator.expected", expected_);
  out.put_value("coordinator.dropped_late", dropped_late_);
  out.put("coordinator.last_accepted", last_accepted_);
  out.put("coordinator.stopped", as_bytes(stopped_));
}

void SynchronousCoordinator::load_state(StateReader& in) {
  in.take("coordinator.begun", std::span<uint64_t>(begun_));
  closed_ = in.take_value<uint64_t>("coordinator.closed");
  accepted_ = in.take_value<uint64_t>("coordinator.accepted");
  expected_ = in.take_value<uint64_t>("coordinator.expected");
  dropped_late_ = in.take_value<uint64_t>("coordinator.dropped_late");
  in.take("coordinator.last_accepted", std::span<int64_t>(last_accepted_));
  std::vector<uint8_t> stopped(stopped_.size());
  in.take("coordinator.stopped", std::span<uint8_t>(stopped));
  stopped_.assign(stopped.begin(), stopped.end());
  // The epoch it stands in, for this run's length: an epoch that had ended
  // (everyone stopped) ends at the versions done; one still open ends at its
  // full length, or this run's end if that comes first.
  const uint64_t done = backup_ == 0 ? *std::max_element(begun_.begin(), begun_.end()) : closed_;
  const bool ended = std::all_of(stopped_.begin(), stopped_.end(), [](bool s) { return s; });
  target_ = ended ? done : std::min<uint64_t>((done / steps_per_epoch_ + 1) * steps_per_epoch_, total_steps_);
  if (done > total_steps_)
    throw Error("checkpoint: " + std::to_string(done) + " updates done, past this run's " +
                std::to_string(total_steps_));
  over_ = false;
}

}  // namespace ptrain
