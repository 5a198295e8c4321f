#include "train/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>

#include "comm/hierarchical_communicator.hpp"
#include "comm/local_group.hpp"
#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "core/rng.hpp"
#include "core/state_stream.hpp"
#include "core/stopwatch.hpp"
#include "core/thread_affinity.hpp"
#include "core/timeline.hpp"
#include "data/sharded_sampler.hpp"
#include "train/checkpoint_writer.hpp"
#include "train/straggler_model.hpp"

namespace ptrain {

namespace {

constexpr uint64_t kDataOrderStream = 1;

// The first failure of a run: later ones are usually the others being woken.
// `training`: it came after the workers began (a retry from a checkpoint may
// get past it), not while they set up (the input is wrong).
class FirstError {
 public:
  void record(const std::string& message, bool training) {
    std::lock_guard lock(mutex_);
    if (!message_.empty()) return;
    message_ = message;
    training_ = training;
  }
  bool any() const { return !message_.empty(); }
  void throw_if_any() const {
    if (message_.empty()) return;
    if (training_) throw InterruptedError(message_);
    throw Error(message_);
  }

 private:
  std::mutex mutex_;
  std::string message_;
  bool training_ = false;
};

void validate(const TrainConfig& c, const Dataset& train_set) {
  if (c.workers < 1) throw Error(fmt::format("run.workers must be at least 1 (got {})", c.workers));
  if (c.batch < 1) throw Error("run.batch must be at least 1");
  if (!(c.epochs > 0) && c.max_steps == 0) throw Error("run.epochs must be > 0 (or run.max_steps set)");
  if (!c.make_strategy) throw Error("train: no strategy given");
  if (train_set.size() == 0) throw Error("training set '" + train_set.name() + "' is empty");
  // The batch against the shard is checked by ShardedSampler, which run_shape()
  // builds before any replica exists.
}

}  // namespace

namespace {

// The length of a run, the same on every worker.
struct RunShape {
  uint64_t data_seed;
  size_t steps_per_epoch, total_steps, epochs;
};

SampleOrder order_of(const Dataset& data) { return data.stream() ? SampleOrder::Stream : SampleOrder::Shuffled; }

RunShape run_shape(const TrainConfig& config, const Dataset& train_set) {
  RunShape shape;
  shape.data_seed = derive_seed(config.seed, kDataOrderStream);
  shape.steps_per_epoch =
      ShardedSampler(train_set.size(), static_cast<size_t>(config.workers), 0, config.batch, shape.data_seed,
                     order_of(train_set))
          .batches_per_epoch();
  shape.total_steps = config.epochs > 0 ? std::max<size_t>(1, static_cast<size_t>(std::llround(
                                                                   config.epochs * static_cast<double>(shape.steps_per_epoch))))
                                         : 0;
  if (config.max_steps > 0 && (shape.total_steps == 0 || config.max_steps < shape.total_steps))
    shape.total_steps = config.max_steps;
  shape.epochs = (shape.total_steps + shape.steps_per_epoch - 1) / shape.steps_per_epoch;
  return shape;
}

// Where a worker is in its shard of the data. Under ssp and async a fast
// worker takes more steps than an epoch's share: it goes on into its next pass.
class DataCursor {
 public:
  DataCursor(ShardedSampler& sampler) : sampler_(sampler) { sampler_.start_epoch(0); }
  // Where a worker resumes that had taken `steps` steps (of a synchronous strategy).
  void seek(size_t steps) {
    pass_ = steps / sampler_.batches_per_epoch(), batch_ = steps % sampler_.batches_per_epoch();
    sampler_.start_epoch(pass_);
  }
  std::span<const size_t> next() {
    if (batch_ == sampler_.batches_per_epoch()) sampler_.start_epoch(++pass_), batch_ = 0;
    return sampler_.batch(batch_++);
  }

 private:
  ShardedSampler& sampler_;
  size_t pass_ = 0, batch_ = 0;
};

// What worker 0 has gathered of the run so far, for a checkpoint.
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

// A worker's step as allgatherv hands it to the others.
uint64_t step_in(const std::vector<std::byte>& bytes) {
  uint64_t step = 0;
  std::memcpy(&step, bytes.data(), std::min(bytes.size(), sizeof step));
  return step;
}

// When the workers write checkpoints: every worker asks at the same steps and
// hears the same answer (for a cadence in seconds, worker 0's clock decides).
class CheckpointClock {
 public:
  CheckpointClock(const Cadence& every, Communicator& comm) : every_(every), comm_(comm) {}
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

// The first worker's non-empty `mine` ("": none), on every worker.
std::string first_reason(Communicator& comm, const std::string& mine) {
  for (const auto& bytes : comm.allgatherv(std::as_bytes(std::span(mine.data(), mine.size()))))
    if (!bytes.empty()) return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  return {};
}

// How a worker whose checkpoint failed says so when the workers agree to stop after a step.
constexpr std::string_view kCheckpointFailedMark = "checkpoint failed: ";

// The steps all workers took together.
uint64_t steps_of_all(Communicator& comm, uint64_t mine) {
  uint64_t all = 0;
  for (const auto& bytes : comm.allgatherv(std::as_bytes(std::span(&mine, 1)))) {
    uint64_t s = 0;
    std::memcpy(&s, bytes.data(), std::min(bytes.size(), sizeof s));
    all += s;
  }
  return all;
}

// Why this worker's step diverged ("": it did not): a non-finite loss, or a
// gradient beyond fp16's range (the codec saturated it).
std::string divergence(int rank, float loss, size_t step, uint64_t saturated_now, uint64_t& saturated_before) {
  std::string why;
  if (!std::isfinite(loss))
    why = diverged_loss(rank, loss, step);
  else if (saturated_now > saturated_before)
    why = fmt::format("worker {}: {} gradient value(s) beyond fp16's range (+-65504) at step {} (diverged; try a "
                      "lower learning rate)",
                      rank, saturated_now - saturated_before, step);
  saturated_before = saturated_now;
  return why;
}

// At an epoch's end, what every worker says of its divergence: "D why" (the
// run must stop), "d why" (it diverged and left, the others went on), "L why"
// (it failed and left), "T why" (worker 0: the test loss is not finite), or
// "" (it trains on). The run diverged when a worker says D, or when every
// worker left and one of them diverged, or else when the test loss did; when
// every worker failed and left, the run cannot go on.
std::string run_divergence(Communicator& comm, const std::string& mine) {
  const auto all = comm.allgatherv(std::as_bytes(std::span(mine.data(), mine.size())));
  std::string first_d, first_left, test;
  bool all_left = true;
  for (const auto& bytes : all) {
    const std::string s(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (s.starts_with("D ")) return s.substr(2);
    if (s.starts_with("T ")) test = s.substr(2);
    if (s.empty() || s.starts_with("T ")) {
      all_left = false;
      continue;
    }
    if (s.starts_with("d ") && first_d.empty()) first_d = s.substr(2);
    if (first_left.empty()) first_left = s.substr(2);
  }
  if (all_left && !first_d.empty()) return "every worker left; " + first_d;
  if (all_left) throw InterruptedError("every worker failed and left the run; the first: " + first_left);
  return test;
}

// One worker's whole run on `comm` (the workers), whatever the backend; with
// parameter servers `with_servers` joins them to the shards. Worker 0
// evaluates, reports progress and fills `result`.
void run_worker(const TrainConfig& config, const RunShape& shape, const Dataset& train_set,
                const Dataset* test_set, Model& replica, StrategyGroup& strategy, Communicator& comm,
                Communicator* with_servers, const TrainCallbacks& callbacks, RunResult& result, bool& began) {
  const int rank = comm.rank(), workers = comm.size();
  TimelineThread timeline(fmt::format("worker {}", rank));
  std::unique_ptr<StragglerModel> straggler;
  if (rank == config.straggler_rank)  // sleeps past twice the timeout only delay the end
    straggler = std::make_unique<StragglerModel>(replica, config.straggler_factor, 2 * config.comm_timeout);
  Model& model = straggler ? *straggler : replica;
  auto side = with_servers ? strategy.for_worker_with_servers(model, comm, *with_servers)
                           : strategy.for_worker(model, comm);
  ShardedSampler sampler(train_set.size(), static_cast<size_t>(workers), static_cast<size_t>(rank),
                         config.batch, shape.data_seed, order_of(train_set));
  DataCursor cursor(sampler);
  Batch batch;
  size_t step = 0;  // this worker's, over the run
  size_t first_epoch = 0;  // the epoch to go on with (a checkpoint taken at an epoch's end names the next)
  std::vector<float> losses;        // this worker's of the epoch (on resume, those before the checkpoint)
  double epoch_seconds_before = 0;  // of this epoch, before a resume
  if (config.resume) {
    const CheckpointStore from = CheckpointStore::existing(config.resume_dir);
    const std::vector<std::byte> part = from.read_part(*config.resume, rank);
    StateReader in(part, "checkpoint " + from.part_path(config.resume->step, config.resume->run, rank));
    step = in.take_value<uint64_t>("step");
    if (side->lockstep() && step > shape.total_steps)
      throw Error(fmt::format("checkpoint {}: taken after step {}, past this run's end at step {} (more epochs?)",
                              config.resume->manifest, step, shape.total_steps));
    if (rank == 0 || !side->replicated()) {
      in.take("params", replica.params());
      side->load_shared_state(in);
    } else {  // worker 0's part holds what every replica shares
      const std::vector<std::byte> first = from.read_part(*config.resume, 0);
      StateReader shared(first, "checkpoint " + from.part_path(config.resume->step, config.resume->run, 0));
      shared.take_value<uint64_t>("step");
      shared.take("params", replica.params());
      side->load_shared_state(shared);
    }
    side->load_state(in);
    replica.load_state(in);
    first_epoch = in.take_value<uint64_t>("epoch.index");
    if (first_epoch > shape.epochs)  // the workers' steps differ: a checkpoint ends an epoch
      throw Error(fmt::format("checkpoint {}: taken after epoch {}, past this run's {} epochs", config.resume->manifest,
                              first_epoch, shape.epochs));
    losses = in.take_vector<float>("epoch.losses");
    epoch_seconds_before = in.take_value<double>("epoch.seconds");
    if (rank == 0) load_result(in, result);
    in.expect_end();
    if (side->lockstep()) {
      // A lockstep trainer writes a part after `step` steps, `losses` of them
      // into its epoch, on every worker at the same step. A part that says
      // otherwise would leave the workers waiting on each other until the timeout.
      if (step != first_epoch * shape.steps_per_epoch + losses.size())
        throw Error(fmt::format(
            "checkpoint {}: worker {}'s part is at step {}, which is not {} steps into epoch {} of "
            "{} steps each",
            config.resume->manifest, rank, step, losses.size(), first_epoch + 1, shape.steps_per_epoch));
      const uint64_t mine = step;
      const auto steps = comm.allgatherv(std::as_bytes(std::span(&mine, 1)));
      for (size_t r = 0; r < steps.size(); ++r)
        if (steps[r] != steps[0])
          throw Error(
              fmt::format("checkpoint {}: the workers' parts are at different steps (worker 0's at {}, "
                          "worker {}'s at {})",
                          config.resume->manifest, step_in(steps[0]), r, step_in(steps[r])));
    } else if (!losses.empty()) {
      // The others checkpoint at epoch ends only, each worker at its own step.
      throw Error(fmt::format("checkpoint {}: worker {}'s part is {} steps into epoch {}, but this strategy "
                              "checkpoints only at the end of an epoch",
                              config.resume->manifest, rank, losses.size(), first_epoch + 1));
    }
    if (rank == 0) result.resumed_from = config.resume->manifest, result.resumed_at_step = step;  // worker 0 fills the result
    cursor.seek(step);
  }
  began = true;  // what fails from here on is the run's, not the input's
  comm.barrier();
  side->start();
  std::unique_ptr<CheckpointStore> store;
  std::unique_ptr<CheckpointWriter> writer;
  if (!config.checkpoint.dir.empty()) {
    store = std::make_unique<CheckpointStore>(config.checkpoint.dir, config.checkpoint.keep);
    // What a failed run left; the others write nothing before the broadcast below.
    if (rank == 0) store->remove_leftovers();
    // This run's name for its parts, the same on every worker.
    uint64_t run_id = rank == 0 ? new_checkpoint_run_id() : 0;
    comm.broadcast(std::as_writable_bytes(std::span(&run_id, 1)), 0);
    writer = std::make_unique<CheckpointWriter>(*store, rank, workers, run_id, config.checkpoint.plan_json,
                                                config.comm_timeout);
  }
  CheckpointClock checkpoint_clock(config.checkpoint.every, comm);
  // Worker 0 tells of each commit once it sees it: one checkpoint is in
  // flight at a time, so the commit counter says when that one is on disk.
  size_t announced = 0;
  CheckpointDone in_flight;
  auto announce_commits = [&] {
    if (rank != 0 || !writer || !callbacks.on_checkpoint || writer->committed() == announced) return;
    announced = writer->committed();
    callbacks.on_checkpoint(in_flight);
  };
  // After a checkpoint failed, every worker at the same step: the writers
  // finish what they write, worker 0 removes what the checkpoint left and
  // ends the run; the others wait for that (under mpirun its abort ends them),
  // so that the error is said once.
  auto stop_after_failed_checkpoint = [&](const std::string& why) {
    writer->abandon();
    comm.barrier();
    if (rank == 0) {
      store->remove_leftovers();
      throw CheckpointFailed(why);
    }
    comm.barrier();  // completes never: worker 0 has left
    throw CheckpointFailed(why);
  };
  const bool lockstep = side->lockstep();
  Stopwatch epoch_clock;
  auto epoch_seconds = [&] { return epoch_seconds_before + epoch_clock.seconds(); };
  // Every worker writes its part, then worker 0 commits them with the manifest.
  // `key` names the checkpoint: the step (lockstep), or all workers' steps.
  StateWriter w;  // lockstep: kept between checkpoints, so that it does not grow again each time
  auto write_checkpoint = [&](size_t next_epoch, uint64_t key) {
    TimelineSpan span("checkpoint", "step", static_cast<int64_t>(step));
    comm.barrier();  // every worker's step done (sequential turns end one after another)
    w.clear();
    w.put_value("step", static_cast<uint64_t>(step));
    if (rank == 0 || !side->replicated()) {
      w.put("params", std::span<const float>(replica.params()));
      side->save_shared_state(w);
    }
    side->save_state(w);
    replica.save_state(w);
    w.put_value("epoch.index", static_cast<uint64_t>(next_epoch));
    w.put("epoch.losses", losses);
    w.put_value("epoch.seconds", epoch_seconds());
    if (rank == 0) save_result(w, result);
    if (lockstep) {
      // Committed before any worker takes the next step (a kill loses at most
      // one interval); flushed to disk by worker 0's writer meanwhile. The
      // workers agree on every part, then on the manifest, so that a failure
      // stops them all here.
      std::string failed = first_reason(comm, writer->write_part_now(key, w.bytes()));
      if (failed.empty()) failed = first_reason(comm, rank == 0 ? writer->publish_now(key) : std::string());
      if (!failed.empty()) stop_after_failed_checkpoint(failed);
      in_flight = {step, store->manifest_path(key)};
      announce_commits();
      return;
    }
    if (with_servers) comm.barrier();  // no step before worker 0 has the shards' state
    writer->submit(key, w.take());  // written and committed while training goes on
    announce_commits();             // the one before, which submit() waited for
    in_flight = {step, store->manifest_path(key)};
  };
  bool left = false;
  std::string left_why;
  std::string my_divergence;    // "D why" or "d why" (see run_divergence) once this worker diverged
  std::string test_divergence;  // worker 0: "T why" once the test loss is not finite
  uint64_t saturated = side->codec_stats().saturated;
  for (size_t epoch = first_epoch; epoch < shape.epochs; ++epoch) {
    const size_t epoch_steps = std::min(shape.steps_per_epoch, shape.total_steps - epoch * shape.steps_per_epoch);
    losses.reserve(epoch_steps);  // empty but after a resume (cleared at each epoch's end)
    comm.barrier();
    epoch_clock.reset();
    double running = 0;
    for (const float l : losses) running += l;
    try {
      while (!left && side->next_step(losses.size(), epoch_steps)) {
        std::optional<TimelineSpan> step_span;  // the step alone, not the checkpoint after it
        step_span.emplace("step", "step", static_cast<int64_t>(step + 1));
        {
          TimelineSpan span("load batch");
          batch.gather(train_set, cursor.next());
        }
        const StepInfo info{step,
                            static_cast<double>(epoch) + static_cast<double>(losses.size()) /
                                                             static_cast<double>(shape.steps_per_epoch),
                            workers};
        const float loss = side->step(batch, info);
        step_span.reset();
        std::string why = divergence(rank, loss, step + 1, side->codec_stats().saturated, saturated);
        // A checkpoint that failed (a full disk) stops the run at once, not an interval on.
        const std::string failed = writer ? writer->failure() : std::string();
        if (lockstep) {  // the same on every worker
          why = side->agree_to_stop(comm, failed.empty() ? why : std::string(kCheckpointFailedMark) + failed);
          if (why.starts_with(kCheckpointFailedMark))
            stop_after_failed_checkpoint(why.substr(kCheckpointFailedMark.size()));
        }
        // Where the workers do not agree on it here: one process (threads), or mpirun ends the job.
        if (!failed.empty()) throw CheckpointFailed(failed);
        if (!why.empty()) {
          // Lockstep: every worker stops here. The others stop the epoch
          // early, or leave while the others go on (async).
          left = true;
          if (lockstep) {
            my_divergence = "D " + why;
          } else if (side->diverged()) {
            my_divergence = "d " + why;
            left_why = why + "; it left the run";
          } else {
            my_divergence = "D " + why;
          }
          break;
        }
        losses.push_back(loss);
        if (rank == 0) result.step_seconds.push_back(static_cast<float>(result.train_seconds + epoch_seconds()));
        ++step;
        running += loss;
        if (rank == 0 && callbacks.on_step)
          callbacks.on_step(StepDone{step, epoch + 1, loss, result.step_seconds.back()});
        announce_commits();
        const size_t b = losses.size();
        // Inside the epoch; an epoch that --max-steps cuts short stays open
        // in its checkpoint, so that a longer run resumed from it completes it.
        if (store && lockstep && b < shape.steps_per_epoch &&
            (checkpoint_clock.due(step, false) || (config.checkpoint.every.off() && b == epoch_steps)))
          write_checkpoint(epoch, step);
        if (rank == 0 && callbacks.on_progress && (b % 5 == 0 || b == epoch_steps)) {
          const double t = epoch_seconds();
          callbacks.on_progress(Progress{
              epoch + 1, shape.epochs, std::min(b, epoch_steps), epoch_steps, running / static_cast<double>(b),
              t > 0 ? static_cast<double>(b * config.batch * static_cast<size_t>(workers)) / t : 0});
        }
      }
    } catch (const CheckpointFailed&) {
      throw;  // the run's, not this worker's: nobody goes on
    } catch (const std::exception& e) {
      // Asynchronous strategies go on without a failed worker; the others end
      // the run, with an error that names the worker.
      const std::string what = e.what();
      if (!side->leave()) {
        if (what.starts_with(fmt::format("worker {}", rank))) throw;
        throw Error(fmt::format("worker {} failed at its step {}: {}", rank, step + 1, what));
      }
      left = true;
      left_why = fmt::format("worker {} failed at its step {} and left: {}", rank, step + 1, what);
    }
    comm.barrier();
    const double seconds = epoch_seconds();
    // Every worker's losses of the epoch (under ssp and async, as many as it took).
    const auto all = comm.allgatherv(std::as_bytes(std::span<const float>(losses)));
    if (rank == 0) {
      EpochMetrics m;
      m.epoch = epoch + 1;
      m.seconds = seconds;
      size_t longest = 0, total = 0;
      for (const auto& bytes : all) {
        longest = std::max(longest, bytes.size() / sizeof(float));
        total += bytes.size() / sizeof(float);
      }
      m.steps = longest;
      m.samples_per_s = static_cast<double>(total * config.batch) / seconds;
      result.samples += total * config.batch;
      // The mean over the workers at each step, as float sums in rank order.
      double sum = 0;
      for (size_t k = 0; k < longest; ++k) {
        float step_sum = 0;
        int count = 0;
        for (const auto& bytes : all) {
          if ((k + 1) * sizeof(float) > bytes.size()) continue;
          float l;
          std::memcpy(&l, bytes.data() + k * sizeof(float), sizeof l);
          step_sum = count == 0 ? l : step_sum + l;
          ++count;
        }
        sum += step_sum;
        result.step_losses.push_back(step_sum / static_cast<float>(count));
      }
      m.train_loss = total > 0 ? sum / static_cast<double>(total) : 0;
      result.train_seconds += m.seconds;
      side->sync_for_evaluation();
      if (test_set) {
        TimelineSpan span("evaluation", "epoch", static_cast<int64_t>(epoch + 1));
        const Metrics test = model.evaluate(*test_set);
        m.test_loss = test.loss;
        m.test_accuracy = test.accuracy;
        m.test_perplexity = test.perplexity;
        m.test_targets = test.targets;
      }
      result.epochs.push_back(m);
      if (callbacks.on_epoch_end) callbacks.on_epoch_end(m);
      if (test_set && !std::isfinite(m.test_loss)) test_divergence = fmt::format(
          "T the test loss became {} after epoch {} (diverged; try a lower learning rate)", m.test_loss, m.epoch);
    }
    comm.barrier();  // the others wait while worker 0 evaluates
    losses.clear();  // the epoch is in the result now
    epoch_seconds_before = 0, epoch_clock.reset();
    // Asynchronous workers may have left for a failure: their status is
    // shared too, so that a run every worker left ends.
    const std::string status = !my_divergence.empty() ? my_divergence
                               : left                   ? "L " + left_why
                                                        : test_divergence;
    if (const std::string why = run_divergence(comm, status); !why.empty()) {
      if (rank == 0) result.diverged = true, result.diverged_why = why;
      break;  // no checkpoint of a diverged state
    }
    if (store && epoch_steps == shape.steps_per_epoch) {
      if (lockstep) {
        if (checkpoint_clock.due(step, true)) write_checkpoint(epoch + 1, step);
      } else {
        // Not after worker 0 left (async): it would not know which pushes the shards must have.
        const uint64_t all = steps_of_all(comm, step);
        if (checkpoint_clock.due_at_epoch_end(all, !left)) write_checkpoint(epoch + 1, all);
      }
    }
    if (side->run_over()) break;
  }
  if (writer) {  // the last checkpoint on disk and committed before the run returns
    writer->finish();
    const std::string failed = first_reason(comm, writer->failure());
    if (!failed.empty()) stop_after_failed_checkpoint(failed);
    announce_commits();
    if (rank == 0) result.checkpoints = writer->committed();
  }
  comm.barrier();
  if (rank == 0) {  // the model to keep: before finish(), which stops parameter servers
    side->sync_for_evaluation();
    auto p = model.params();
    result.final_params.assign(p.begin(), p.end());
    result.device_traffic = replica.device_traffic();
  }
  side->finish();
  // Every worker's byte counters, steps and departure, to worker 0.
  const CommStats mine = with_servers ? with_servers->stats() : comm.stats();
  const auto all = comm.allgatherv(std::as_bytes(std::span<const CommStats>(&mine, 1)));
  const CodecStats my_codec = side->codec_stats();
  const auto all_codec = comm.allgatherv(std::as_bytes(std::span<const CodecStats>(&my_codec, 1)));
  const uint64_t my_steps = step;
  const auto all_steps = comm.allgatherv(std::as_bytes(std::span<const uint64_t>(&my_steps, 1)));
  const auto all_left = comm.allgatherv(std::as_bytes(std::span<const char>(left_why)));
  if (rank != 0) return;
  for (const auto& bytes : all_codec) {
    CodecStats s;
    std::memcpy(&s, bytes.data(), sizeof s);
    result.codec.push_back(s);
  }
  for (const auto& bytes : all_steps) {
    uint64_t s;
    std::memcpy(&s, bytes.data(), sizeof s);
    result.worker_steps.push_back(s);
    result.steps = std::max<size_t>(result.steps, s);
  }
  for (const auto& bytes : all_left)
    if (!bytes.empty()) result.left.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  result.servers = side->server_stats();
  result.notes = side->notes();
  for (const auto& bytes : all) {
    CommStats s;
    std::memcpy(&s, bytes.data(), sizeof s);
    result.comm.push_back(s);
  }
}

void finish(const TrainConfig& config, RunResult& result) {
  for (size_t s = 0; s < result.step_losses.size(); ++s)
    if ((s + 1) % std::max<size_t>(config.log_every, 1) == 0 || s + 1 == result.step_losses.size())
      result.loss_curve.push_back({s + 1, result.step_losses[s]});
  result.samples_per_s =
      result.train_seconds > 0 ? static_cast<double>(result.samples) / result.train_seconds : 0;
}

StrategyConfig strategy_config(const TrainConfig& config, const RunShape& shape) {
  StrategyConfig c = config.strategy;
  c.timeout = config.comm_timeout;
  c.steps_per_epoch = shape.steps_per_epoch;
  c.total_steps = shape.total_steps;
  c.time_limit_seconds = config.time_limit_s;
  return c;
}

// A thread of its own for `body(began)`; a failure is recorded in
// `first_error` (a training failure once `began` is set) and `stop` wakes the
// others, so that none waits on it until a timeout.
template <class Body, class Stop>
std::thread guarded_thread(FirstError& first_error, Body body, Stop stop) {
  return std::thread([&first_error, body, stop] {
    bool began = false;
    try {
      body(began);
    } catch (const std::exception& e) {
      first_error.record(e.what(), began || dynamic_cast<const InterruptedError*>(&e));
      stop();
    }
  });
}

}  // namespace

RunResult train(const TrainConfig& config, const Dataset& train_set, const Dataset* test_set,
                const ModelFactory& make_replica, const TrainCallbacks& callbacks) {
  validate(config, train_set);
  Stopwatch wall;
  const int workers = config.workers;
  const RunShape shape = run_shape(config, train_set);
  std::vector<std::unique_ptr<Model>> replicas;
  for (int r = 0; r < workers; ++r) replicas.push_back(make_replica(r));
  auto strategy = config.make_strategy(strategy_config(config, shape), replicas[0]->params().size(), workers);
  const int servers = strategy->servers();
  auto group = std::make_shared<LocalGroup>(workers, config.comm_timeout);
  // With parameter servers, the shards are threads W..W+S-1 of a second group.
  auto with_servers = servers > 0 ? std::make_shared<LocalGroup>(workers + servers, config.comm_timeout) : nullptr;
  RunResult result;
  FirstError first_error;
  auto stop_everyone = [&](const std::string& reason) {
    group->abort(reason);
    if (with_servers) with_servers->abort(reason);
    strategy->abort(reason);
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r)
    threads.push_back(guarded_thread(
        first_error,
        [&, r](bool& began) {
          if (config.pin_workers) pin_current_thread(r);
          LocalCommunicator comm(group, r);
          std::unique_ptr<LocalCommunicator> to_servers;
          if (with_servers) to_servers = std::make_unique<LocalCommunicator>(with_servers, r);
          run_worker(config, shape, train_set, test_set, *replicas[static_cast<size_t>(r)], *strategy, comm,
                     to_servers.get(), callbacks, result, began);
        },
        [&, r] { stop_everyone(fmt::format("stopped because worker {} failed", r)); }));
  for (int s = 0; s < servers; ++s)
    threads.push_back(guarded_thread(
        first_error,
        [&, s](bool& began) {
          began = true;  // a shard fails only once workers talk to it
          LocalCommunicator comm(with_servers, workers + s);
          strategy->serve(comm, s, replicas[0]->layout());
        },
        [&, s] { stop_everyone(fmt::format("stopped because server shard {} failed", s)); }));
  for (auto& t : threads) t.join();
  // Every writer is done: what a failed run wrote of a checkpoint it never committed goes.
  if (first_error.any() && !config.checkpoint.dir.empty()) {
    try {
      CheckpointStore(config.checkpoint.dir, config.checkpoint.keep).remove_leftovers();
    } catch (const std::exception&) {  // best effort: the run's own error says more
    }
  }
  first_error.throw_if_any();
  finish(config, result);
  result.wall_seconds = wall.seconds();
  return result;
}

namespace {

RunResult train_with(Communicator& comm, Communicator* with_servers, const TrainConfig& config,
                     const Dataset& train_set, const Dataset* test_set, const ModelFactory& make_replica,
                     const TrainCallbacks& callbacks) {
  if (config.workers != comm.size())
    throw Error(fmt::format("train: {} workers configured but the {} backend has {}", config.workers,
                            comm.backend(), comm.size()));
  validate(config, train_set);
  Stopwatch wall;
  const RunShape shape = run_shape(config, train_set);
  auto model = make_replica(comm.rank());
  auto strategy = config.make_strategy(strategy_config(config, shape), model->params().size(), comm.size());
  if (strategy->servers() > 0 && !with_servers)
    throw Error("train: this strategy needs server shards besides the workers");
  if (with_servers && with_servers->size() != comm.size() + strategy->servers())
    throw Error(fmt::format("train: {} workers and {} server shards need {} ranks, not {}", comm.size(),
                            strategy->servers(), comm.size() + strategy->servers(), with_servers->size()));
  RunResult result;
  bool began = false;
  try {
    run_worker(config, shape, train_set, test_set, *model, *strategy, comm, with_servers, callbacks, result, began);
  } catch (const InterruptedError&) {
    throw;
  } catch (const Error& e) {
    if (began) throw InterruptedError(e.what());
    throw;
  }
  finish(config, result);
  result.wall_seconds = wall.seconds();
  return result;
}

}  // namespace

RunResult train_on_threads(std::span<Communicator* const> across, std::span<Communicator* const> mesh,
                           const TrainConfig& config, const Dataset& train_set, const Dataset* test_set,
                           const ModelFactory& make_replica, const TrainCallbacks& callbacks) {
  if (across.empty() || mesh.size() != across.size())
    throw Error(fmt::format("train: {} threads' communicators across the ranks but {} on the mesh", across.size(),
                            mesh.size()));
  const int threads = static_cast<int>(across.size()), rank = across[0]->rank();
  if (config.workers != across[0]->size() * threads)
    throw Error(fmt::format("train: {} workers configured but {} ranks x {} threads make {}", config.workers,
                            across[0]->size(), threads, across[0]->size() * threads));
  validate(config, train_set);
  Stopwatch wall;
  const RunShape shape = run_shape(config, train_set);
  std::vector<std::unique_ptr<Model>> replicas;
  for (int t = 0; t < threads; ++t) replicas.push_back(make_replica(rank * threads + t));
  auto strategy = config.make_strategy(strategy_config(config, shape), replicas[0]->params().size(), config.workers);
  if (strategy->servers() > 0) throw Error("train: worker threads in MPI ranks run with no parameter-server shards");
  auto group = std::make_shared<LocalGroup>(threads, config.comm_timeout, rank * threads);
  RunResult result;
  FirstError first_error;
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.push_back(guarded_thread(
        first_error,
        [&, t](bool& began) {
          if (config.pin_workers) pin_current_thread(t);  // the t-th core this rank may use
          HierarchicalCommunicator comm(group, t, *across[static_cast<size_t>(t)], *mesh[static_cast<size_t>(t)]);
          run_worker(config, shape, train_set, test_set, *replicas[static_cast<size_t>(t)], *strategy, comm, nullptr,
                     callbacks, result, began);
        },
        [&, t] {
          // The siblings may be waiting on other ranks, which wait on them.
          const std::string reason = fmt::format("stopped because worker {} failed", rank * threads + t);
          group->abort(reason);
          for (Communicator* c : across) c->interrupt(reason);
          for (Communicator* c : mesh) c->interrupt(reason);
          strategy->abort(reason);
        }));
  for (auto& t : running) t.join();
  first_error.throw_if_any();
  finish(config, result);
  result.wall_seconds = wall.seconds();
  return result;
}

RunResult train_on(Communicator& comm, const TrainConfig& config, const Dataset& train_set,
                   const Dataset* test_set, const ModelFactory& make_replica,
                   const TrainCallbacks& callbacks) {
  return train_with(comm, nullptr, config, train_set, test_set, make_replica, callbacks);
}

RunResult train_on(Communicator& workers, Communicator& with_servers, const TrainConfig& config,
                   const Dataset& train_set, const Dataset* test_set, const ModelFactory& make_replica,
                   const TrainCallbacks& callbacks) {
  return train_with(workers, &with_servers, config, train_set, test_set, make_replica, callbacks);
}

void serve_on(Communicator& with_servers, const TrainConfig& config, const Dataset& train_set,
              const ModelFactory& make_replica) {
  validate(config, train_set);
  const RunShape shape = run_shape(config, train_set);
  auto model = make_replica(kLayoutOnly);  // for the layout of the flat buffer, which the codecs need
  auto strategy = config.make_strategy(strategy_config(config, shape), model->params().size(), config.workers);
  if (with_servers.size() != config.workers + strategy->servers())
    throw Error(fmt::format("train: {} workers and {} server shards need {} ranks, not {}", config.workers,
                            strategy->servers(), config.workers + strategy->servers(), with_servers.size()));
  try {
    strategy->serve(with_servers, with_servers.rank() - config.workers, model->layout());
  } catch (const InterruptedError&) {
    throw;
  } catch (const Error& e) {
    throw InterruptedError(e.what());  // a shard fails only once workers talk to it
  }
}

}  // namespace ptrain
