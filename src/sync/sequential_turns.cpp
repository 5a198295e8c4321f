#include "sync/sequential_turns.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/wait_deadline.hpp"

namespace ptrain {

std::unique_ptr<StrategyGroup> SequentialOptions::make_group(const StrategyConfig& config, size_t num_params,
                                                             int workers) const {
  return std::make_unique<SequentialGroup>(config, num_params, workers);
}

SequentialGroup::SequentialGroup(const StrategyConfig& config, size_t num_params, int workers)
    : central_(num_params),
      optimizer_config_(config.optimizer),
      optimizer_(make_optimizer(config.optimizer, num_params)),
      workers_(workers),
      // A turn waits for the G-1 turns before it, each a whole forward and backward pass.
      turn_timeout_(config.timeout * std::max(workers, 1)) {}

std::unique_ptr<WorkerStrategy> SequentialGroup::for_worker(Model& model, Communicator& comm) {
  return std::make_unique<SequentialTurns>(*this, model, comm);
}

void SequentialGroup::abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (!aborted_) abort_reason_ = reason;
  aborted_ = true;
  turn_changed_.notify_all();
}

SequentialTurns::SequentialTurns(SequentialGroup& group, Model& model, Communicator& comm)
    : group_(group), model_(model), comm_(comm) {}

void SequentialTurns::start() {
  if (comm_.rank() == 0) {
    std::lock_guard lock(group_.mutex_);
    auto p = model_.params();
    std::copy(p.begin(), p.end(), group_.central_.begin());
  }
  comm_.barrier();  // nobody takes a turn before the central weights are set
  // Resumed, each worker goes on with its own turns: they must follow the
  // turns taken in all, or it would wait for a turn that never comes.
  std::lock_guard lock(group_.mutex_);
  if (group_.turn_ != local_step_ * static_cast<uint64_t>(group_.workers_))
    throw Error(
        fmt::format("sequential: worker {} resumes after {} turns of its own, but {} turns of {} workers "
                    "were taken in all: the checkpoint's parts do not fit together",
                    comm_.rank(), local_step_, group_.turn_, group_.workers_));
}

float SequentialTurns::step(const Batch& batch, const StepInfo& info) {
  const uint64_t my_turn =
      local_step_++ * static_cast<uint64_t>(group_.workers_) + static_cast<uint64_t>(comm_.rank());
  std::unique_lock lock(group_.mutex_);
  const bool ready = WaitDeadline(group_.turn_timeout_).wait(group_.turn_changed_, lock, [&] {
    return group_.turn_ == my_turn || group_.aborted_;
  });
  if (group_.aborted_) throw Error(group_.abort_reason_);
  if (!ready)
    throw Error(
        fmt::format("sequential: worker {} timed out after {:g} s waiting for its turn {}: worker {} "
                    "never finished turn {}",
                    comm_.rank(), static_cast<double>(group_.turn_timeout_.count()) / 1000.0, my_turn,
                    group_.turn_ % static_cast<uint64_t>(group_.workers_), group_.turn_));
  lock.unlock();
  // Only the worker whose turn it is touches the central weights, so the
  // compute runs without the lock and the others can still time out.
  auto params = model_.params();
  std::copy(group_.central_.begin(), group_.central_.end(), params.begin());
  const float loss = model_.forward_backward(batch);
  group_.optimizer_->set_lr(lr_at(group_.optimizer_config_, info.epoch));
  group_.optimizer_->step(group_.central_, model_.grads());
  lock.lock();
  if (!std::isfinite(loss) && group_.diverged_why_.empty()) {
    group_.diverged_why_ = diverged_loss(comm_.rank(), loss, info.step + 1);
    group_.diverged_step_ = local_step_;
  }
  group_.turn_++;
  group_.turn_changed_.notify_all();
  return loss;
}

StepStop SequentialTurns::agree_to_stop(Communicator&, const StepStop&) {
  const uint64_t step_done = local_step_ * static_cast<uint64_t>(group_.workers_);
  std::unique_lock lock(group_.mutex_);
  const bool ready = WaitDeadline(group_.turn_timeout_).wait(group_.turn_changed_, lock, [&] {
    return group_.turn_ >= step_done || group_.aborted_;
  });
  if (group_.aborted_) throw Error(group_.abort_reason_);
  if (!ready)
    throw Error(fmt::format("sequential: worker {} timed out after {:g} s waiting for the turns of its step {}: "
                            "worker {} never finished turn {}",
                            comm_.rank(), static_cast<double>(group_.turn_timeout_.count()) / 1000.0, local_step_,
                            group_.turn_ % static_cast<uint64_t>(group_.workers_), group_.turn_));
  if (group_.diverged_why_.empty() || group_.diverged_step_ != local_step_) return {};
  return {StepStop::Kind::Diverged, group_.diverged_why_};
}

void SequentialTurns::sync_for_evaluation() {
  std::lock_guard lock(group_.mutex_);
  auto params = model_.params();
  std::copy(group_.central_.begin(), group_.central_.end(), params.begin());
}

void SequentialTurns::save_state(StateWriter& out) {
  out.put_value("sequential.local_step", local_step_);
  if (comm_.rank() != 0) return;
  std::lock_guard lock(group_.mutex_);
  out.put_value("sequential.turn", group_.turn_);
  out.put("sequential.central", group_.central_);
  group_.optimizer_->save_state(out);
}

void SequentialTurns::load_state(StateReader& in) {
  local_step_ = in.take_value<uint64_t>("sequential.local_step");
  if (comm_.rank() != 0) return;
  std::lock_guard lock(group_.mutex_);
  group_.turn_ = in.take_value<uint64_t>("sequential.turn");
  in.take("sequential.central", std::span<float>(group_.central_));
  group_.optimizer_->load_state(in);
  // start() takes the central weights from worker 0's replica.
  auto params = model_.params();
  std::copy(group_.central_.begin(), group_.central_.end(), params.begin());
}

}  // namespace ptrain
