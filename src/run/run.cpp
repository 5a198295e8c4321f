#include "run/run.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "comm/gloo_communicator.hpp"
#include "core/compute_device.hpp"
#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "core/thread_affinity.hpp"
#include "model/device_support.hpp"
#include "model/model_registry.hpp"
#include "run/memory_check.hpp"
#include "run/model_fit.hpp"
#include "run/resume.hpp"
#include "run/run_placement.hpp"
#include "run/run_recording.hpp"
#include "run/save_model.hpp"
#include "run/shared_memory_run.hpp"
#include "run/train_config.hpp"
#include "run/checkpoint_store.hpp"

namespace ptrain {

namespace {

// A token stream is cut into pieces of the model's length, after checking
// that every row of every worker gets one at least.
void cut_streams(const RunPlan& plan, LoadedData& data) {
  const auto own = sequence_length(plan.model);
  const size_t length = own ? own->tokens : kDefaultSequenceLength;
  const size_t rows = static_cast<size_t>(std::max(plan.run.workers, 1)) * std::max<size_t>(plan.run.batch, 1);
  const size_t tokens = data.train.stream_tokens();
  if (tokens / rows < length)
    throw Error(fmt::format("{}: the training stream's {} tokens, read as {} rows ({} workers x batch {}), give "
                            "each row {}, not one piece of {}: lower {} or the batch",
                            own ? fmt::format("model.{} {}", own->field, length) : std::string("data"), tokens, rows,
                            plan.run.workers, plan.run.batch, tokens / rows, length,
                            own ? "the " + own->field : std::string("the workers")));
  data.train = data.train.chunked(length);
  if (data.test.stream()) data.test = data.test.chunked(length);
}

// The data as the models see it, and the standardisation applied to it (none: as loaded).
LoadedData load_data(const RunPlan& plan, const RunInputs& inputs,
                     std::optional<Standardization>& standardization) {
  LoadedData data = inputs.data ? *inputs.data : std::visit([](const auto& d) { return d.load(); }, plan.data);
  if (data.train.stream()) cut_streams(plan, data);
  if (const auto why = test_set_mismatch(data.train, data.test)) throw Error("data: " + *why);
  if (plan.data_controls.train_samples > 0) data.train = data.train.head(plan.data_controls.train_samples);
  if (plan.data_controls.test_samples > 0) data.test = data.test.head(plan.data_controls.test_samples);
  // Token ids (language modelling) are names, not measurements: never standardised.
  if (plan.data_controls.standardize && data.train.task() == Task::Classification) {
    const auto s = fit_standardization(data.train);
    apply_standardization(data.train, s);
    apply_standardization(data.test, s);
    standardization = s;
  }
  return data;
}

}  // namespace

RunPlan resolved_plan(RunPlan plan, const World& world) {
  plan.run.workers = world.workers;
  plan.run.backend = world.backend;
  return plan;
}

namespace {

RunResult run_once(const RunPlan& given, World& world, const RunCallbacks& callbacks, const RunInputs& inputs) {
  const RunPlan plan = resolved_plan(given, world);
  Problems problems = check_plan(plan);
  if (!inputs.data) std::visit([&](const auto& d) { d.check("data.", problems); }, plan.data);
  std::optional<FoundCheckpoint> resume;
  if (!inputs.resume.empty()) {
    if (!checkpoints(plan.strategy))
      problems.add("strategy", fmt::format(": the {} strategy does not resume from checkpoints yet ({} do)",
                                           StrategyRegistry::name_of(plan.strategy), strategies_with_checkpoints()));
    else {
      const bool reports = world.reports();
      resume = newest_checkpoint(inputs.resume, [&](const std::string& why) {
        if (reports && callbacks.on_warning) callbacks.on_warning("skipped " + why);
      });
      check_resume(checkpoint_plan(*resume), plan, problems);
    }
  }
  check_save_model(plan, static_cast<bool>(inputs.model), world.reports(), problems);
  RunRecording::check(plan, world, problems);
  // The plan's check said it reads; whether this build and machine have it is asked here.
  const ComputeDevice device = parse_compute_device(plan.run.device).value_or(ComputeDevice{});
  if (parse_compute_device(plan.run.device))
    if (const std::string why = device_unavailable(device); !why.empty())
      problems.add("run.device", plan.run.device + ": " + why);
  if (!plan.run.checkpoint_dir.empty()) {
    try {
      CheckpointStore::check_writable(plan.run.checkpoint_dir);
    } catch (const Error& e) {
      problems.add("run.checkpoint_dir", std::string(": ") + e.what());
    }
  }
  const std::shared_ptr<const Topology> topology = load_run_topology(plan, problems);
  problems.throw_if_any();
  set_compute_threads(plan.run.threads_per_worker);
  prepare_device(device);
  // mpirun binds each of 2 ranks or fewer to one core, where its worker threads would take turns.
  if (world.local_workers > 1 && world.reports() && callbacks.on_warning &&
      allowed_cpus().size() < static_cast<size_t>(world.local_workers))
    callbacks.on_warning(fmt::format(
        "rank 0 may run on {} core(s) for its {} worker threads; give mpirun --bind-to none, or --map-by "
        "slot:PE={} for a core per thread",
        allowed_cpus().size(), world.local_workers, world.local_workers));

  if (world.reports() && callbacks.on_warning && !gloo_interface_warning().empty())
    callbacks.on_warning(gloo_interface_warning());

  std::optional<Standardization> standardization;
  const LoadedData data = load_data(plan, inputs, standardization);
  const ModelInput input{data.train.sample_shape(), data.train.num_classes(), data.train.label_shape(), plan.run.seed};
  Problems memory;
  check_memory(plan, input, world.backend == Backend::Local ? world.workers : world.local_workers, !inputs.model, memory);
  memory.throw_if_any();
  // Threads spread over the GPUs by worker, ranks by their place on their host.
  const int gpus = device.cuda ? visible_gpus() : 0;
  const ModelFactory factory = [&](int worker) -> std::unique_ptr<Model> {
    ModelInput in = input;
    if (worker != kLayoutOnly)
      in.device = device_for_worker(device, world.device_slot(worker), gpus);
    return inputs.model ? inputs.model(in) : make_model(plan.model, in);
  };
  RunStart start;
  {
    auto probe = factory(kLayoutOnly);
    start.model = probe->name();
    start.parameters = probe->params().size();
    // Before any worker starts, so that a model that does not fit is bad input (exit 2), not a failed run.
    const auto* file = std::get_if<TorchScriptOptions>(&plan.model);
    check_model_fits(*probe, data.train,
                     inputs.model ? probe->name() + " (the caller's)" : file ? file->path : probe->name());
  }
  start.train_samples = data.train.size();
  start.test_samples = data.test.size();
  start.task = data.train.task();
  start.world = &world;
  if (resume) start.resumed_from = resume->manifest;
  if (callbacks.on_start && world.reports()) callbacks.on_start(start);

  TrainConfig config = train_config(plan, world.workers);
  config.placer = run_placer(plan, topology, world);
  config.resume = resume;
  config.resume_dir = inputs.resume;
  TrainCallbacks train_callbacks{callbacks.on_progress, callbacks.on_epoch_end, callbacks.on_step,
                                 callbacks.on_checkpoint};
  RunResult result;
  if (const auto shm = shared_memory_config(plan.strategy)) {
    result = run_shared_memory(plan, *shm, world.workers, data.train, data.test, factory, callbacks, config);
  } else if (world.backend == Backend::Local) {
    result = train(config, data.train, &data.test, factory, train_callbacks);
  } else if (world.is_server()) {
    serve_on(*world.ranks, config, data.train, factory);
  } else if (world.local_workers > 1) {
    std::vector<Communicator*> across, mesh;
    for (auto& c : world.links.across) across.push_back(c.get());
    for (auto& c : world.links.mesh) mesh.push_back(c.get());
    result = train_on_threads(across, mesh, config, data.train, &data.test, factory, train_callbacks);
  } else if (world.worker_ranks) {
    result = train_on(*world.worker_ranks, *world.ranks, config, data.train, &data.test, factory, train_callbacks);
  } else {
    result = train_on(world.worker_group(), config, data.train, &data.test, factory, train_callbacks);
  }
  result.parameters = start.parameters;
  result.model = start.model;
  result.task = data.train.task();
  result.train_samples = start.train_samples;
  result.test_samples = start.test_samples;
  result.model_input = input;
  result.standardization = standardization;
  result.caller_model = static_cast<bool>(inputs.model);
  result.placement = run_placement_record(config.placer, world, std::move(result.placement));
  result.device = device_description(device_for_worker(device, world.device_slot(0), gpus));
  return result;
}

// The manifest of the newest intact checkpoint in `dir` ("": none, or no such directory).
std::string newest_manifest(const std::string& dir) {
  if (dir.empty() || !std::filesystem::is_directory(dir)) return {};
  const auto found = CheckpointStore::existing(dir).newest();
  return found ? found->manifest : std::string();
}

float learning_rate(const OptimizerChoice& optimizer) {
  return std::visit([](const auto& o) { return o.lr; }, optimizer);
}

// Attempts the run until it ends, rolling back or restarting as the plan allows.
RunResult run_attempts(const RunPlan& given, World& world, const RunCallbacks& callbacks, const RunInputs& inputs,
                       RunRecording& recording) {
  RunPlan plan = given;
  RunInputs attempt = inputs;
  const std::string& dir = given.run.checkpoint_dir;
  // A checkpoint already there belongs to another run, unless this one resumed from it.
  const std::string there_before = inputs.resume.empty() ? newest_manifest(dir) : std::string();
  std::vector<Recovery> recoveries;
  int rollbacks = 0, restarts = 0;
  // Where the next attempt goes on from: this run's newest checkpoint, else
  // the one it resumed from, else the start.
  auto go_back = [&](const std::string& kind, const std::string& why) {
    const std::string newest = newest_manifest(dir);
    Recovery r{kind, why, {}, learning_rate(plan.optimizer)};
    if (!newest.empty() && newest != there_before) {
      attempt.resume = dir, r.from = newest;
    } else if (!inputs.resume.empty()) {
      attempt.resume = inputs.resume, r.from = newest_manifest(inputs.resume);
    } else {
      attempt.resume.clear();
    }
    recoveries.push_back(r);
    recording.recovery(r);
    if (world.reports() && callbacks.on_warning)
      callbacks.on_warning(fmt::format("{}; {} from {} with learning rate {:.6g} ({} {} of {})", why,
                                       kind == "rollback" ? "rolling back" : "restarting",
                                       r.from.empty() ? "the start" : r.from, r.lr, kind,
                                       kind == "rollback" ? rollbacks : restarts,
                                       kind == "rollback" ? given.run.max_rollbacks : given.run.max_restarts));
  };
  for (;;) {
    RunResult result;
    try {
      result = run_once(plan, world, callbacks, attempt);
    } catch (const InterruptedError& e) {
      // Threads only (the plan refuses restarts under mpirun): every worker is in this process.
      if (restarts >= given.run.max_restarts || world.backend != Backend::Local) throw;
      ++restarts;
      go_back("restart", e.what());
      continue;
    }
    if (world.ranks) {
      // Every rank (parameter-server shards too) learns from worker 0 whether
      // the workers diverged, so that all roll back or stop alike.
      std::byte diverged{result.diverged ? uint8_t{1} : uint8_t{0}};
      world.ranks->broadcast(std::span(&diverged, 1), 0);
      result.diverged = diverged == std::byte{1};
    }
    if (result.diverged && given.run.on_diverge == OnDiverge::Rollback && rollbacks < given.run.max_rollbacks) {
      ++rollbacks;
      std::visit([&](auto& o) { o.lr = static_cast<float>(o.lr * given.run.rollback_lr_scale); }, plan.optimizer);
      go_back("rollback", result.diverged_why);
      continue;
    }
    result.recoveries = std::move(recoveries);
    // The model of the attempt that ended the run, on the reporting process
    // (under mpirun, rank 0, which holds the final parameters); a diverged
    // model is not worth keeping.
    if (!given.run.save_model.empty() && world.reports() && !result.diverged)
      save_model(given.run.save_model, resolved_plan(plan, world), result);
    return result;
  }
}

}  // namespace

RunResult run(const RunPlan& given, World& world, const RunCallbacks& caller_callbacks, const RunInputs& inputs) {
  RunRecording recording(given, world, !inputs.resume.empty());
  const RunCallbacks callbacks = recording.wrap(caller_callbacks);
  try {
    RunResult result = run_attempts(given, world, callbacks, inputs, recording);
    recording.finished(result);
    return result;
  } catch (const std::exception& e) {
    recording.failed(e.what());
    throw;
  }
}

}  // namespace ptrain
