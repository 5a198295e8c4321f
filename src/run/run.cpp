#include "run/run.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "model/model_registry.hpp"
#include "run/resume.hpp"
#include "run/shared_memory_run.hpp"
#include "run/train_config.hpp"

namespace ptrain {

namespace {

LoadedData load_data(const RunPlan& plan, const RunInputs& inputs) {
  LoadedData data = inputs.data ? *inputs.data : std::visit([](const auto& d) { return d.load(); }, plan.data);
  if (data.train.sample_shape() != data.test.sample_shape() || data.train.num_classes() != data.test.num_classes() ||
      data.train.label_shape() != data.test.label_shape())
    throw Error("data: the training and test sets differ in sample shape, target shape or classes");
  if (plan.data_controls.train_samples > 0) data.train = data.train.head(plan.data_controls.train_samples);
  // Token ids (language modelling) are names, not measurements: never standardised.
  if (plan.data_controls.standardize && data.train.task() == Task::Classification) {
    const auto s = fit_standardization(data.train);
    apply_standardization(data.train, s);
    apply_standardization(data.test, s);
  }
  return data;
}

}  // namespace

RunPlan resolved_plan(RunPlan plan, const World& world) {
  plan.run.workers = world.workers;
  plan.run.backend = world.backend;
  return plan;
}

RunResult run(const RunPlan& given, World& world, const RunCallbacks& callbacks, const RunInputs& inputs) {
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
  problems.throw_if_any();
  set_compute_threads(plan.run.threads_per_worker);

  const LoadedData data = load_data(plan, inputs);
  const ModelInput input{data.train.sample_shape(), data.train.num_classes(), data.train.label_shape(), plan.run.seed};
  const ModelFactory factory = [&]() -> std::unique_ptr<Model> {
    return inputs.model ? inputs.model(input) : make_model(plan.model, input);
  };
  RunStart start;
  {
    auto probe = factory();
    start.model = probe->name();
    start.parameters = probe->params().size();
  }
  start.train_samples = data.train.size();
  start.test_samples = data.test.size();
  start.task = data.train.task();
  start.world = &world;
  if (callbacks.on_start && world.reports()) callbacks.on_start(start);

  TrainConfig config = train_config(plan, world.workers);
  config.resume = resume;
  config.resume_dir = inputs.resume;
  TrainCallbacks train_callbacks{callbacks.on_progress, callbacks.on_epoch_end};
  RunResult result;
  if (const auto shm = shared_memory_config(plan.strategy)) {
    result = run_shared_memory(plan, *shm, world.workers, data.train, data.test, factory, callbacks);
  } else if (world.backend == Backend::Local) {
    result = train(config, data.train, &data.test, factory, train_callbacks);
  } else if (world.is_server()) {
    serve_on(*world.ranks, config, data.train, factory);
  } else if (world.worker_ranks) {
    result = train_on(*world.worker_ranks, *world.ranks, config, data.train, &data.test, factory, train_callbacks);
  } else {
    result = train_on(*world.ranks, config, data.train, &data.test, factory, train_callbacks);
  }
  result.parameters = start.parameters;
  result.model = start.model;
  result.task = data.train.task();
  result.train_samples = start.train_samples;
  result.test_samples = start.test_samples;
  return result;
}

}  // namespace ptrain
