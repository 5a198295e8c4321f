#include "sync/bounded_staleness_coordinator.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace ptrain {

BoundedStalenessCoordinator::BoundedStalenessCoordinator(int workers, size_t steps_per_epoch, size_t total_steps,
                                                         std::optional<uint64_t> staleness,
                                                         uint64_t warmup_single, double time_limit_seconds,
                                                         StalePolicy stale_policy)
    : tickets_per_epoch_(static_cast<uint64_t>(workers) * steps_per_epoch),
      tickets_in_run_(static_cast<uint64_t>(workers) * total_steps),
      tickets_left_(tickets_in_run_),
      epoch_tickets_(std::min(tickets_per_epoch_, tickets_left_)),
      staleness_(staleness),
      warmup_single_(warmup_single),
      clock_(static_cast<size_t>(workers), 0),
      stale_policy_(stale_policy),
      holding_(static_cast<size_t>(workers), 1),
      last_staleness_(static_cast<size_t>(workers), 0),
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
  if (!over_ && std::none_of(stopped_.begin(), stopped_.end(), [](bool s) { return s; }) &&
      (budget_.spent() || stop_requested_))
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
  const uint64_t wanted = step_batches(stale_policy_, last_staleness_[w], static_cast<int>(clock_.size()));
  decision.batches = std::min(wanted, epoch_tickets_ - issued_);
  holding_[w] = decision.batches;
  step_batches_.record(decision.batches);
  issued_ += decision.batches;
  issued_total_++;
  decision.go = 1;
  return decision;
}

void BoundedStalenessCoordinator::pushed(int worker, uint64_t staleness) {
  const bool was_warming_up = warming_up();
  const auto w = static_cast<size_t>(worker);
  clock_[w] += holding_[w];
  last_staleness_[w] = staleness;
  pushes_++;
  if (was_warming_up && !warming_up()) clock_.assign(clock_.size(), 0);  // the bound starts after the warm-up
}

void BoundedStalenessCoordinator::left(int worker) { live_[static_cast<size_t>(worker)] = false; }

void BoundedStalenessCoordinator::save_state(StateWriter& out) const {
  if (!all_stopped()) throw Error("ssp/async: a checkpoint is taken only at an epoch's end");
  out.put_value("coordinator.tickets_before_epoch", tickets_in_run_ - tickets_left_);
  out.put_value("coordinator.epoch_tickets", epoch_tickets_);
  out.put_value("coordinator.issued_total", issued_total_);
  out.put_value("coordinator.pushes", pushes_);
  out.put_value("coordinator.max_gap", max_gap_);
}

void BoundedStalenessCoordinator::load_state(StateReader& in) {
  const auto before = in.take_value<uint64_t>("coordinator.tickets_before_epoch");
  epoch_tickets_ = in.take_value<uint64_t>("coordinator.epoch_tickets");
  issued_total_ = in.take_value<uint64_t>("coordinator.issued_total");
  pushes_ = in.take_value<uint64_t>("coordinator.pushes");
  max_gap_ = in.take_value<uint64_t>("coordinator.max_gap");
  if (before + epoch_tickets_ > tickets_in_run_)
    throw Error("checkpoint: " + std::to_string(before + epoch_tickets_) + " steps done, past this run's " +
                std::to_string(tickets_in_run_));
  // As at the end of the checkpoint's epoch: the next Begin opens the next one.
  tickets_left_ = tickets_in_run_ - before;
  issued_ = epoch_tickets_;
  stopped_.assign(stopped_.size(), true);
  live_.assign(live_.size(), true);  // a worker that left is back in the resumed run
  over_ = false;
}

}  // namespace ptrain
