#include "run/shared_memory_run.hpp"

#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "data/random_subset.hpp"
#include "run/run.hpp"
#include "run/checkpoint_writer.hpp"

namespace ptrain {

namespace {

EpochMetrics epoch_metrics(const ShmEpoch& e, size_t batch) {
  EpochMetrics m;
  m.epoch = e.epoch;
  m.steps = e.gradients;
  m.train_loss = e.train_loss;
  m.test_loss = e.test.loss;
  m.test_accuracy = e.test.accuracy;
  m.test_perplexity = e.test.perplexity;
  m.test_targets = e.test.targets;
  m.seconds = e.seconds;
  m.samples_per_s = e.seconds > 0 ? static_cast<double>(e.gradients * batch) / e.seconds : 0.0;
  return m;
}

// What the summary says of a shared-memory run, beside the common lines.
std::vector<std::pair<std::string, std::string>> notes_of(const ShmConfig& c, const AsyncSgdResult& r) {
  std::vector<std::pair<std::string, std::string>> notes;
  const double applied = static_cast<double>(r.totals.applied);
  notes.emplace_back("stopped by", r.stopped_by + (r.diverged ? ": " + r.diverged_why : ""));
  if (c.target_loss > 0)
    notes.emplace_back("target", fmt::format("training loss {} {}", c.target_loss,
                                             r.seconds_to_target ? fmt::format("reached in {:.2f} s", *r.seconds_to_target)
                                                                 : std::string("not reached")));
  notes.emplace_back("training", fmt::format("loss {:.4f} after {} updates ({:.0f} updates/s)", r.final_loss,
                                             r.totals.applied, r.train_seconds > 0 ? applied / r.train_seconds : 0.0));
  notes.emplace_back("staleness", fmt::format("mean {:.2f}, p50 {}, p99 {}, max {}", r.staleness.mean(),
                                              r.staleness.quantile(0.5), r.staleness.quantile(0.99), r.staleness.max()));
  notes.insert(notes.end(), r.notes.begin(), r.notes.end());
  if (r.backoff_waits > 0)
    notes.emplace_back("backoff", fmt::format("{} wait(s), {:.1f} ms in all", r.backoff_waits, r.backoff_us / 1000));
  return notes;
}

}  // namespace

RunResult run_shared_memory(const RunPlan& plan, ShmConfig shm, int threads, const Dataset& train_set,
                            const Dataset& test_set, const ModelFactory& factory, const RunCallbacks& callbacks,
                            const TrainConfig& config) {
  const RunControls& run = plan.run;
  shm.threads = threads;
  shm.batch = run.batch;
  shm.optimizer = effective_optimizer_and_codec(plan).optimizer;
  shm.epochs = run.epochs;
  shm.placer = config.placer;
  shm.seed = run.seed;
  shm.time_limit_s = run.time_limit;
  shm.max_gradients = static_cast<uint64_t>(run.max_steps) * static_cast<uint64_t>(threads);
  // The loss set is fixed by the seed, whatever the strategy.
  const size_t loss_sample = std::visit(
      [](const auto& o) -> size_t {
        if constexpr (requires { o.loss_sample; }) return o.loss_sample;
        else return 0;
      },
      plan.strategy);
  const Dataset loss_set = random_subset(train_set, loss_sample, run.seed);

  ShmCallbacks shm_callbacks;
  shm_callbacks.on_check = callbacks.on_loss_check;
  if (callbacks.on_epoch_end)
    shm_callbacks.on_epoch = [&](const ShmEpoch& e) { callbacks.on_epoch_end(epoch_metrics(e, run.batch)); };
  RunResult result;
  // The process's threads write one part, committed at once by the writer's
  // thread while training goes on; a checkpoint that cannot be written ends
  // the run as interrupted (a retry may find the disk freed), as elsewhere.
  std::unique_ptr<CheckpointStore> store;
  std::unique_ptr<CheckpointWriter> writer;
  auto interrupted = [](const auto& write) {
    try {
      write();
    } catch (const InterruptedError&) {
      throw;
    } catch (const Error& e) {
      throw InterruptedError(e.what());
    }
  };
  if (!config.checkpoint.dir.empty()) {
    store = std::make_unique<CheckpointStore>(config.checkpoint.dir, config.checkpoint.keep);
    writer = std::make_unique<CheckpointWriter>(*store, 0, 1, new_checkpoint_run_id(), config.checkpoint.plan_json,
                                                config.comm_timeout);
    // Every N steps: every N steps of each thread, N x threads gradients in all (as --max-steps counts).
    shm.checkpoint_every = static_cast<uint64_t>(config.checkpoint.every.steps) * static_cast<uint64_t>(threads);
    shm.checkpoint_every_s = config.checkpoint.every.seconds;
    shm_callbacks.on_checkpoint = [&](uint64_t gradients, std::vector<std::byte> state) {
      interrupted([&] { writer->submit(gradients, std::move(state)); });
    };
  }
  std::vector<std::byte> resume_state;
  ShmResume resume;
  if (config.resume) {
    const CheckpointStore from = CheckpointStore::existing(config.resume_dir);
    if (config.resume->parts.size() != 1)
      throw Error(fmt::format("checkpoint {}: has {} parts; a shared-memory run writes one", config.resume->manifest,
                              config.resume->parts.size()));
    resume_state = from.read_part(*config.resume, 0);
    resume = {resume_state, "checkpoint " + from.part_path(config.resume->step, config.resume->run, 0)};
    result.resumed_from = config.resume->manifest;
    result.resumed_at_step = config.resume->step;
  }
  // The threads share one copy of the parameters in host memory: every replica on the CPU.
  AsyncSgdResult r = run_async_sgd(shm, train_set, loss_set, [&] { return factory(0); }, shm_callbacks, &test_set,
                                   config.resume ? &resume : nullptr);
  if (writer) {  // the last checkpoint on disk and committed before the run returns
    interrupted([&] { writer->finish(); });
    result.checkpoints = writer->committed();
  }

  for (const auto& e : r.epochs) result.epochs.push_back(epoch_metrics(e, run.batch));
  for (const auto& c : r.checks) result.loss_curve.push_back({static_cast<size_t>(c.updates), c.loss});
  result.final_params = std::move(r.final_params);
  r.final_params.clear();
  for (const auto& t : r.thread_gradients) result.worker_steps.push_back(static_cast<size_t>(t));
  for (size_t s : result.worker_steps) result.steps = std::max(result.steps, s);
  result.notes = notes_of(shm, r);
  result.samples = static_cast<size_t>(r.gradients) * run.batch;
  result.train_seconds = r.train_seconds;
  result.wall_seconds = r.wall_seconds;
  result.samples_per_s = r.train_seconds > 0 ? static_cast<double>(result.samples) / r.train_seconds : 0.0;
  result.diverged = r.diverged;
  result.diverged_why = r.diverged_why;
  result.placement = r.placement;
  result.shared_memory = std::move(r);
  return result;
}

}  // namespace ptrain
