#include "run/worker_checkpoints.hpp"

#include <numeric>

#include "comm/allgather_values.hpp"
#include "core/run_failure.hpp"
#include "core/timeline.hpp"
#include "run/trainer.hpp"

namespace ptrain {

namespace {

// The first worker's non-empty `mine` ("": none), on every worker.
std::string first_reason(Communicator& comm, const std::string& mine) {
  for (const auto& bytes : comm.allgatherv(std::as_bytes(std::span(mine.data(), mine.size()))))
    if (!bytes.empty()) return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  return {};
}

// The steps all workers took together.
uint64_t steps_of_all(Communicator& comm, uint64_t mine) {
  const std::vector<uint64_t> steps = allgather_value(comm, mine);
  return std::accumulate(steps.begin(), steps.end(), uint64_t{0});
}

}  // namespace

// When the workers write checkpoints: every worker asks at the same steps and
// hears the same answer (for a cadence in seconds, worker 0's clock decides).
class WorkerCheckpoints::Clock {
 public:
  Clock(const Cadence& every, Communicator& comm) : every_(every), comm_(comm) {}
  // Lockstep strategies, after `step` steps of every worker; `epoch_end`: the epoch has just ended.
  bool due(size_t step, bool epoch_end) {
    if (every_.steps > 0) return step % every_.steps == 0;
    if (every_.seconds <= 0) return epoch_end;
    return worker_0_says(since_.seconds() >= every_.seconds);
  }
  // The others, at an epoch's end, where the workers' steps differ: every N
  // steps means every N x W steps of all workers together (`all_steps`).
  // `can` (worker 0's): false skips this epoch's checkpoint.
  bool due_at_epoch_end(uint64_t all_steps, bool can) {
    bool now = can;
    if (every_.steps > 0) {
      const uint64_t period = every_.steps * static_cast<uint64_t>(comm_.size());
      now = now && all_steps / period > last_all_steps_ / period;
    } else if (every_.seconds > 0) {
      now = now && since_.seconds() >= every_.seconds;
    }
    if (!worker_0_says(now)) return false;
    last_all_steps_ = all_steps;
    return true;
  }

 private:
  bool worker_0_says(bool yes) {
    std::byte now{0};
    if (comm_.rank() == 0 && yes) now = std::byte{1};
    comm_.broadcast(std::span(&now, 1), 0);
    if (now == std::byte{1}) since_.reset();
    return now == std::byte{1};
  }

  Cadence every_;
  Communicator& comm_;
  Stopwatch since_;
  uint64_t last_all_steps_ = 0;
};

WorkerCheckpoints::WorkerCheckpoints(const TrainConfig& config, Communicator& comm, bool lockstep,
                                     bool with_servers,
                                     std::function<void(const CheckpointDone&)> on_checkpoint)
    : config_(config),
      comm_(comm),
      lockstep_(lockstep),
      with_servers_(with_servers),
      on_checkpoint_(std::move(on_checkpoint)),
      clock_(std::make_unique<Clock>(config.checkpoint.every, comm)) {
  if (config.checkpoint.dir.empty()) return;
  store_ = std::make_unique<CheckpointStore>(config.checkpoint.dir, config.checkpoint.keep);
  // What a failed run left; the others write nothing before the broadcast below.
  if (comm.rank() == 0) store_->remove_leftovers();
  // This run's name for its parts, the same on every worker.
  uint64_t run_id = comm.rank() == 0 ? new_checkpoint_run_id() : 0;
  comm.broadcast(std::as_writable_bytes(std::span(&run_id, 1)), 0);
  writer_ = std::make_unique<CheckpointWriter>(*store_, comm.rank(), comm.size(), run_id,
                                               config.checkpoint.plan_json, config.comm_timeout);
}

WorkerCheckpoints::~WorkerCheckpoints() = default;

std::string WorkerCheckpoints::failure() const { return writer_ ? writer_->failure() : std::string(); }

void WorkerCheckpoints::stop_after_failure(const std::string& why) {
  // The writers finish what they write, worker 0 removes what the checkpoint
  // left and ends the run; the others wait for that (under mpirun its abort
  // ends them), so that the error is said once.
  writer_->abandon();
  comm_.barrier();
  if (comm_.rank() == 0) {
    store_->remove_leftovers();
    throw CheckpointFailed(why);
  }
  comm_.barrier();  // completes never: worker 0 has left
  throw CheckpointFailed(why);
}

void WorkerCheckpoints::announce_commits() {
  if (comm_.rank() != 0 || !writer_ || !on_checkpoint_ || writer_->committed() == announced_) return;
  announced_ = writer_->committed();
  on_checkpoint_(CheckpointDone{in_flight_step_, in_flight_manifest_});
}

void WorkerCheckpoints::after_step(const WorkerPosition& at, size_t epoch_steps, const RunShape& shape,
                                   const WorkerParts& parts) {
  const size_t b = at.losses.size();
  if (store_ && lockstep_ && b < shape.steps_per_epoch &&
      (clock_->due(at.step, false) || (config_.checkpoint.every.off() && b == epoch_steps)))
    write(at, at.step, parts);
}

void WorkerCheckpoints::after_epoch(const WorkerPosition& at, bool left, const WorkerParts& parts) {
  if (!store_) return;
  if (lockstep_) {
    if (clock_->due(at.step, true)) write(at, at.step, parts);
    return;
  }
  // Not after worker 0 left (async): it would not know which pushes the shards must have.
  const uint64_t all = steps_of_all(comm_, at.step);
  if (clock_->due_at_epoch_end(all, !left)) write(at, all, parts);
}

void WorkerCheckpoints::write(const WorkerPosition& at, uint64_t key, const WorkerParts& parts) {
  TimelineSpan span("checkpoint", "step", static_cast<int64_t>(at.step));
  comm_.barrier();  // every worker's step done (sequential turns end one after another)
  part_.clear();
  write_worker_part(part_, at, parts);
  if (lockstep_) {
    // Committed before any worker takes the next step (a kill loses at most
    // one interval); flushed to disk by worker 0's writer meanwhile. The
    // workers agree on every part, then on the manifest, so that a failure
    // stops them all here.
    std::string failed = first_reason(comm_, writer_->write_part_now(key, part_.bytes()));
    if (failed.empty())
      failed = first_reason(comm_, comm_.rank() == 0 ? writer_->publish_now(key) : std::string());
    if (!failed.empty()) stop_after_failure(failed);
    in_flight_step_ = at.step, in_flight_manifest_ = store_->manifest_path(key);
    announce_commits();
    return;
  }
  if (with_servers_) comm_.barrier();  // no step before worker 0 has the shards' state
  writer_->submit(key, part_.take());  // written and committed while training goes on
  announce_commits();                  // the one before, which submit() waited for
  in_flight_step_ = at.step, in_flight_manifest_ = store_->manifest_path(key);
}

size_t WorkerCheckpoints::finish() {
  if (!writer_) return 0;
  writer_->finish();
  const std::string failed = first_reason(comm_, writer_->failure());
  if (!failed.empty()) stop_after_failure(failed);
  announce_commits();
  return writer_->committed();
}

}  // namespace ptrain
