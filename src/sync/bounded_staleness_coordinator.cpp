#include "sync/bounded_staleness_coordinator.hpp"

#include <algorithm>

namespace ptrain {

BoundedStalenessCoordinator::BoundedStalenessCoordinator(int workers, size_t steps_per_epoch, size_t total_steps,
                                                         std::optional<uint64_t> staleness,
                                                         uint64_t warmup_single, double time_limit_seconds)
    : tickets_per_epoch_(static_cast<uint64_t>(workers) * steps_per_epoch),
      tickets_left_(static_cast<uint64_t>(workers) * total_steps),
      epoch_tickets_(std::min(tickets_per_epoch_, tickets_left_)),
      staleness_(staleness),
      warmup_single_(warmup_single),
      clock_(static_cast<size_t>(workers), 0),
      live_(static_cast<size_t>(workers), true),
      stopped_(static_cast<size_t>(workers), false),
      budget_(time_limit_seconds) {}

bool BoundedStalenessCoordinator::all_stopped() const {
  for (size_t j = 0; j < stopped_.size(); ++j)
    if (live_[j] && !stopped_[j]) return false;
  return true;
}

std::optional<PsDecision> BoundedStalenessCoordinator::begin(int worker) {
  const auto w = static_cast<size_t>(worker);
  if (all_stopped()) {  // everyone heard the last epoch end: the next begins
    tickets_left_ -= epoch_tickets_;
    epoch_tickets_ = std::min(tickets_per_epoch_, tickets_left_);
    issued_ = 0;
    stopped_.assign(stopped_.size(), false);
    clock_.assign(clock_.size(), 0);
  }
  budget_.epoch_begins();
  // Decided before anyone hears this epoch end, so that every worker hears the same.
  if (!over_ && std::none_of(stopped_.begin(), stopped_.end(), [](bool s) { return s; }) && budget_.spent())
    over_ = true;
  PsDecision decision;
  if (issued_ >= epoch_tickets_ || over_) {
    stopped_[w] = true;
    if (all_stopped()) budget_.epoch_ends();
    decision.received = issued_total_;
    decision.over = over_ ? 1 : 0;
    return decision;
  }
  if (warming_up() && worker != 0) return std::nullopt;
  if (staleness_ && !warming_up()) {
    uint64_t slowest = clock_[w];
    for (size_t j = 0; j < clock_.size(); ++j)
      if (live_[j] && !stopped_[j]) slowest = std::min(slowest, clock_[j]);
    const uint64_t gap = clock_[w] - slowest;
    if (gap > *staleness_) return std::nullopt;
    max_gap_ = std::max(max_gap_, gap);
  }
  issued_++;
  issued_total_++;
  decision.go = 1;
  return decision;
}

void BoundedStalenessCoordinator::pushed(int worker) {
  const bool was_warming_up = warming_up();
  clock_[static_cast<size_t>(worker)]++;
  pushes_++;
  if (was_warming_up && !warming_up()) clock_.assign(clock_.size(), 0);  // the bound starts after the warm-up
}

void BoundedStalenessCoordinator::left(int worker) { live_[static_cast<size_t>(worker)] = false; }

}  // namespace ptrain
