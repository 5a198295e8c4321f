#include "run/worker_loop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "comm/allgather_values.hpp"
#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "model/microbatch_model.hpp"
#include "run/epoch_summary.hpp"
#include "run/memory_limit.hpp"
#include "run/straggler_model.hpp"
#include "run/trainer.hpp"

namespace ptrain {

namespace {

std::unique_ptr<Model> microbatches_for(const TrainConfig& config, Model& replica) {
  if (config.microbatches <= 1 || config.pipeline_stages > 0) return nullptr;  // a pipeline takes them itself
  return std::make_unique<MicrobatchModel>(replica, config.microbatches);
}

std::unique_ptr<Model> straggler_for(const TrainConfig& config, int rank, Model& inner) {
  if (rank != config.straggler_rank) return nullptr;
  // Sleeps past twice the timeout only delay the end.
  return std::make_unique<StragglerModel>(inner, config.straggler_factor, 2 * config.comm_timeout);
}

}  // namespace

WorkerLoop::WorkerLoop(const TrainConfig& config, const RunShape& shape, const Dataset& train_set,
                       const Dataset* test_set, Model& replica, StrategyGroup& strategy, Communicator& comm,
                       Communicator* with_servers, const TrainCallbacks& callbacks, RunResult& result)
    : config_(config),
      shape_(shape),
      train_set_(train_set),
      test_set_(test_set),
      replica_(replica),
      comm_(comm),
      with_servers_(with_servers),
      callbacks_(callbacks),
      result_(result),
      rank_(comm.rank()),
      workers_(comm.size()),
      timeline_(fmt::format("worker {}", rank_)),
      microbatches_(microbatches_for(config, replica)),
      straggler_(straggler_for(config, rank_, microbatches_ ? *microbatches_ : replica)),
      model_(straggler_ ? *straggler_ : microbatches_ ? *microbatches_ : replica),
      side_(with_servers ? strategy.for_worker_with_servers(model_, comm, *with_servers)
                         : strategy.for_worker(model_, comm)),
      sampler_(train_set.size(), data_shard(config, rank_).shards, data_shard(config, rank_).index, config.batch,
               shape.data_seed, order_of(train_set)),
      cursor_(sampler_) {
  check_memory();  // before training: what it holds before its first step is the input's to answer for
}

void WorkerLoop::check_memory() const {
  check_memory_limit(config_.memory_limit, rank_, memory_of(*side_, replica_, config_.strategy.optimizer),
                     config_.pipeline_stages > 1, stepped_);
}

WorkerLoop::~WorkerLoop() = default;

WorkerParts WorkerLoop::parts() {
  return WorkerParts{replica_, *side_, rank_ == 0 ? &result_ : nullptr, rank_};
}

const WorkerPosition& WorkerLoop::position() {
  position_.epoch_seconds = epoch_seconds();
  position_.batches = cursor_.taken();
  return position_;
}

void WorkerLoop::run(bool& began) {
  if (config_.resume) {
    position_ = resume_worker(config_, shape_, comm_, parts());
    seconds_before_ = position_.epoch_seconds;
    cursor_.seek(position_.batches);
    epoch_batches_ = position_.losses.size();  // a lockstep run resumed inside an epoch: one a step
  }
  began = true;  // what fails from here on is the run's, not the input's
  comm_.barrier();
  side_->start();
  checkpoints_ = std::make_unique<WorkerCheckpoints>(config_, comm_, side_->lockstep(),
                                                     with_servers_ != nullptr, callbacks_.on_checkpoint);
  saturated_ = side_->codec_stats().saturated;
  for (size_t epoch = position_.epoch; epoch < shape_.epochs; ++epoch) {
    position_.epoch = epoch;
    const size_t epoch_steps =
        std::min(shape_.steps_per_epoch, shape_.total_steps - epoch * shape_.steps_per_epoch);
    train_epoch(epoch_steps);
    if (!end_epoch(epoch_steps)) break;
  }
  finish();
}

void WorkerLoop::train_epoch(size_t epoch_steps) {
  auto& losses = position_.losses;  // empty but after a resume (cleared at each epoch's end)
  losses.reserve(epoch_steps);
  comm_.barrier();
  epoch_clock_.reset();
  double running = 0;
  for (const float l : losses) running += l;
  try {
    while (!left_ && side_->next_step(losses.size(), epoch_steps)) take_step(epoch_steps, running);
  } catch (const CheckpointFailed&) {
    throw;  // the run's, not this worker's: nobody goes on
  } catch (const std::exception& e) {
    // Asynchronous strategies go on without a failed worker; the others end
    // the run, with an error that names the worker.
    const std::string what = e.what();
    if (!side_->leave()) {
      if (what.starts_with(fmt::format("worker {}", rank_))) throw;
      throw Error(fmt::format("worker {} failed at its step {}: {}", rank_, position_.step + 1, what));
    }
    left_ = true;
    left_why_ = fmt::format("worker {} failed at its step {} and left: {}", rank_, position_.step + 1, what);
  }
}

void WorkerLoop::take_step(size_t epoch_steps, double& running) {
  WorkerPosition& at = position_;
  float loss = 0;
  {
    TimelineSpan step_span("step", "step", static_cast<int64_t>(at.step + 1));  // not the checkpoint after it
    const size_t batches = side_->step_batches();
    {
      TimelineSpan span("load batch", "batches", static_cast<int64_t>(batches));
      batch_.gather(train_set_, cursor_.next(batches));
    }
    const double fractional_epoch =
        static_cast<double>(at.epoch) +
        static_cast<double>(epoch_batches_) / static_cast<double>(shape_.steps_per_epoch);
    epoch_batches_ += batches;
    loss = side_->step(batch_, StepInfo{at.step, fractional_epoch, workers_});
  }
  if (const std::string why = stop_after_step(loss); !why.empty()) return diverge(why);
  at.losses.push_back(loss);
  if (rank_ == 0) result_.step_seconds.push_back(static_cast<float>(result_.train_seconds + epoch_seconds()));
  ++at.step;
  if (!stepped_) {  // a pipeline stage has measured the activations it keeps
    stepped_ = true;
    check_memory();
  }
  running += loss;
  if (rank_ == 0 && callbacks_.on_step)
    callbacks_.on_step(StepDone{at.step, at.epoch + 1, loss, result_.step_seconds.back()});
  checkpoints_->announce_commits();
  checkpoints_->after_step(position(), epoch_steps, shape_, parts());
  report_progress(epoch_steps, running);
}

// Why this worker stops after its step ("": it goes on). A checkpoint that
// failed (a full disk) stops the run at once, not an interval on.
std::string WorkerLoop::stop_after_step(float loss) {
  std::string why =
      step_divergence(rank_, loss, position_.step + 1, side_->codec_stats().saturated, saturated_);
  const std::string failed = checkpoints_->failure();
  if (side_->lockstep()) {  // the same on every worker
    StepStop mine;
    if (!failed.empty())
      mine = {StepStop::Kind::CheckpointFailed, failed};
    else if (!why.empty())
      mine = {StepStop::Kind::Diverged, why};
    const StepStop all = side_->agree_to_stop(comm_, mine);
    if (all.kind == StepStop::Kind::CheckpointFailed) checkpoints_->stop_after_failure(all.why);
    why = all.why;
  }
  // Where the workers do not agree on it here: one process (threads), or mpirun ends the job.
  if (!failed.empty()) throw CheckpointFailed(failed);
  return why;
}

// Lockstep: every worker stops at this step. The others stop the epoch early,
// or leave while the others go on (async).
void WorkerLoop::diverge(const std::string& why) {
  left_ = true;
  if (!side_->lockstep() && side_->diverged()) {
    diverged_ = {WorkerStatus::Kind::DivergedAndLeft, why};
    left_why_ = why + "; it left the run";
  } else {
    diverged_ = {WorkerStatus::Kind::Diverged, why};
  }
}

void WorkerLoop::report_progress(size_t epoch_steps, double running) const {
  const size_t b = position_.losses.size();
  if (rank_ != 0 || !callbacks_.on_progress || (b % 5 != 0 && b != epoch_steps)) return;
  const double t = epoch_seconds();
  callbacks_.on_progress(
      Progress{position_.epoch + 1, shape_.epochs, std::min(b, epoch_steps), epoch_steps,
               running / static_cast<double>(b),
               t > 0 ? static_cast<double>(epoch_batches_ * config_.batch * data_shard(config_, rank_).shards) / t
                     : 0});
}

// Returns false when the run ends after this epoch.
bool WorkerLoop::end_epoch(size_t epoch_steps) {
  comm_.barrier();
  const double seconds = epoch_seconds();
  // Every worker's losses of the epoch (under ssp and async, as many as it took).
  const auto all = comm_.allgatherv(std::as_bytes(std::span<const float>(position_.losses)));
  const auto drawn = allgather_value(comm_, static_cast<uint64_t>(epoch_batches_));
  std::optional<Metrics> test;
  if (test_set_) {  // worker 0's, or every stage's of a pipeline
    TimelineSpan span("evaluation", "epoch", static_cast<int64_t>(position_.epoch + 1));
    test = side_->evaluate(model_, *test_set_, rank_);
  }
  // A pipeline's stages take each of its batches together: one batch a step for them all.
  const size_t shared_by = static_cast<size_t>(std::max(config_.pipeline_stages, 1));
  if (rank_ == 0)
    record_epoch(summarize_epoch(position_.epoch, seconds, config_.batch, shared_by, all, drawn, result_),
                 test);
  comm_.barrier();           // the others wait while worker 0 evaluates
  position_.losses.clear();  // the epoch is in the result now
  epoch_batches_ = 0;
  seconds_before_ = 0, epoch_clock_.reset();
  if (const std::string why = run_stop_verdict(comm_, status()); !why.empty()) {
    if (rank_ == 0) result_.diverged = true, result_.diverged_why = why;
    return false;  // no checkpoint of a diverged state
  }
  if (epoch_steps == shape_.steps_per_epoch) {
    ++position_.epoch;  // a checkpoint taken at an epoch's end names the next
    checkpoints_->after_epoch(position(), left_, parts());
  }
  return !side_->run_over();
}

// Worker 0: the epoch with its test figures goes into the result.
void WorkerLoop::record_epoch(EpochMetrics m, const std::optional<Metrics>& test) {
  if (test) {
    m.test_loss = test->loss;
    m.test_accuracy = test->accuracy;
    m.test_perplexity = test->perplexity;
    m.test_targets = test->targets;
  }
  result_.epochs.push_back(m);
  if (callbacks_.on_epoch_end) callbacks_.on_epoch_end(m);
  if (test_set_ && !std::isfinite(m.test_loss))
    test_status_ = {
        WorkerStatus::Kind::TestDiverged,
        fmt::format("the test loss became {} after epoch {} (diverged; try a lower learning rate)",
                    m.test_loss, m.epoch)};
}

// What this worker says at an epoch's end: asynchronous workers may have left
// for a failure, so that a run every worker left ends.
WorkerStatus WorkerLoop::status() const {
  if (diverged_.kind != WorkerStatus::Kind::Training) return diverged_;
  if (left_) return {WorkerStatus::Kind::Left, left_why_};
  return test_status_;
}

void WorkerLoop::finish() {
  // The last checkpoint on disk and committed before the run returns.
  const size_t committed = checkpoints_->finish();
  if (rank_ == 0) result_.checkpoints = committed;
  comm_.barrier();
  // The model to keep: before finish(), which stops parameter servers.
  std::vector<float> whole = side_->whole_parameters(model_, rank_);
  if (rank_ == 0) {
    result_.final_params = std::move(whole);
    result_.device_traffic = replica_.device_traffic();
  }
  side_->finish();
  gather_totals();
}

// Every worker's byte counters, codec counts, steps and departure, to worker 0.
void WorkerLoop::gather_totals() {
  const auto comm = allgather_value(comm_, with_servers_ ? with_servers_->stats() : comm_.stats());
  const auto codec = allgather_value(comm_, side_->codec_stats());
  const auto steps = allgather_value(comm_, static_cast<uint64_t>(position_.step));
  const auto left = comm_.allgatherv(std::as_bytes(std::span<const char>(left_why_)));
  std::vector<WorkerMemory> memory;  // the same config on every worker: all gather, or none
  if (config_.memory_limit > 0) memory = allgather_value(comm_, memory_of(*side_, replica_, config_.strategy.optimizer));
  if (rank_ != 0) return;
  result_.codec = codec;
  for (const uint64_t s : steps) {
    result_.worker_steps.push_back(s);
    result_.steps = std::max<size_t>(result_.steps, s);
  }
  for (const auto& bytes : left)
    if (!bytes.empty()) result_.left.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  result_.servers = side_->server_stats();
  result_.notes = side_->notes();
  if (config_.memory_limit > 0) result_.notes.emplace_back("memory", memory_note(memory, config_.memory_limit));
  result_.pipeline = side_->pipeline_stats();
  result_.comm = comm;
}

}  // namespace ptrain
