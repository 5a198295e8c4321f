#include "run/worker_part.hpp"

#include <fmt/format.h>

#include "comm/allgather_values.hpp"
#include "core/error.hpp"
#include "run/checkpoint_store.hpp"
#include "run/trainer.hpp"

namespace ptrain {

namespace {

// What worker 0 has gathered of the run so far.
void save_result(StateWriter& out, const RunResult& r) {
  out.put("result.epochs", r.epochs);
  out.put("result.step_losses", r.step_losses);
  out.put("result.step_seconds", r.step_seconds);
  out.put_value("result.train_seconds", r.train_seconds);
  out.put_value("result.samples", static_cast<uint64_t>(r.samples));
}

void load_result(StateReader& in, RunResult& r) {
  r.epochs = in.take_vector<EpochMetrics>("result.epochs");
  r.step_losses = in.take_vector<float>("result.step_losses");
  r.step_seconds = in.take_vector<float>("result.step_seconds");
  r.train_seconds = in.take_value<double>("result.train_seconds");
  r.samples = in.take_value<uint64_t>("result.samples");
}

// Worker 0 alone saves what replicas share.
bool holds_shared(const WorkerParts& parts) { return parts.rank == 0 || !parts.side.replicated(); }

// A lockstep trainer writes a part after `step` steps, `losses` of them into
// its epoch, on every worker at the same step. A part that says otherwise
// would leave the workers waiting on each other until the timeout.
void check_lockstep_position(const std::string& manifest, const WorkerPosition& at, const RunShape& shape,
                             Communicator& comm) {
  if (at.step != at.epoch * shape.steps_per_epoch + at.losses.size())
    throw Error(fmt::format(
        "checkpoint {}: worker {}'s part is at step {}, which is not {} steps into epoch {} of {} steps each",
        manifest, comm.rank(), at.step, at.losses.size(), at.epoch + 1, shape.steps_per_epoch));
  const std::vector<uint64_t> steps = allgather_value(comm, static_cast<uint64_t>(at.step));
  for (size_t r = 0; r < steps.size(); ++r)
    if (steps[r] != steps[0])
      throw Error(fmt::format(
          "checkpoint {}: the workers' parts are at different steps (worker 0's at {}, worker {}'s at {})",
          manifest, steps[0], r, steps[r]));
}

}  // namespace

void write_worker_part(StateWriter& out, const WorkerPosition& at, const WorkerParts& parts) {
  out.put_value("step", static_cast<uint64_t>(at.step));
  out.put_value("batches", static_cast<uint64_t>(at.batches));
  parts.side.save_placement(out);
  if (holds_shared(parts)) {
    out.put("params", std::span<const float>(parts.replica.params()));
    parts.side.save_shared_state(out);
  }
  parts.side.save_state(out);
  parts.replica.save_state(out);
  out.put_value("epoch.index", static_cast<uint64_t>(at.epoch));
  out.put("epoch.losses", at.losses);
  out.put_value("epoch.seconds", at.epoch_seconds);
  if (parts.result) save_result(out, *parts.result);
}

WorkerPosition resume_worker(const TrainConfig& config, const RunShape& shape, Communicator& comm,
                             const WorkerParts& parts) {
  const FoundCheckpoint& found = *config.resume;
  const CheckpointStore from = CheckpointStore::existing(config.resume_dir);
  const std::vector<std::byte> part = from.read_part(found, parts.rank);
  StateReader in(part, "checkpoint " + from.part_path(found.step, found.run, parts.rank));
  WorkerPosition at;
  at.step = in.take_value<uint64_t>("step");
  at.batches = in.take_value<uint64_t>("batches");
  const bool lockstep = parts.side.lockstep();
  if (lockstep && at.step > shape.total_steps)
    throw Error(
        fmt::format("checkpoint {}: taken after step {}, past this run's end at step {} (more epochs?)",
                    found.manifest, at.step, shape.total_steps));
  parts.side.load_placement(in);  // which parameters the replica keeps, before they are read
  if (holds_shared(parts)) {
    in.take("params", parts.replica.params());
    parts.side.load_shared_state(in);
  } else {  // worker 0's part holds what every replica shares
    const std::vector<std::byte> first = from.read_part(found, 0);
    StateReader shared(first, "checkpoint " + from.part_path(found.step, found.run, 0));
    shared.take_value<uint64_t>("step");
    shared.take_value<uint64_t>("batches");
    shared.take("params", parts.replica.params());
    parts.side.load_shared_state(shared);
  }
  parts.side.load_state(in);
  parts.replica.load_state(in);
  at.epoch = in.take_value<uint64_t>("epoch.index");
  if (at.epoch > shape.epochs)  // the workers' steps differ: a checkpoint ends an epoch
    throw Error(fmt::format("checkpoint {}: taken after epoch {}, past this run's {} epochs", found.manifest,
                            at.epoch, shape.epochs));
  at.losses = in.take_vector<float>("epoch.losses");
  at.epoch_seconds = in.take_value<double>("epoch.seconds");
  if (parts.result) load_result(in, *parts.result);
  in.expect_end();
  if (lockstep)
    check_lockstep_position(found.manifest, at, shape, comm);
  else if (!at.losses.empty())  // the others checkpoint at epoch ends only, each worker at its own step
    throw Error(
        fmt::format("checkpoint {}: worker {}'s part is {} steps into epoch {}, but this strategy "
                    "checkpoints only at the end of an epoch",
                    found.manifest, parts.rank, at.losses.size(), at.epoch + 1));
  if (parts.result) parts.result->resumed_from = found.manifest, parts.result->resumed_at_step = at.step;
  return at;
}

}  // namespace ptrain
