#include "run/train_config.hpp"

#include "plan/plan_json.hpp"

namespace ptrain {

TrainConfig train_config(const RunPlan& plan, int workers) {
  const RunControls& run = plan.run;
  const Effective effective = effective_optimizer_and_codec(plan);
  TrainConfig c;
  c.make_strategy = strategy_factory_of(plan.strategy);
  c.strategy.optimizer = effective.optimizer;
  c.strategy.codec = effective.codec;
  c.strategy.pull = effective.pull;
  c.strategy.time_limit_seconds = run.time_limit;
  c.workers = workers;
  c.batch = run.batch;
  c.microbatches = run.microbatches;
  c.pipeline_stages = pipeline_stages_of(plan.strategy, workers);
  c.epochs = run.epochs;
  c.max_steps = run.max_steps;
  c.seed = run.seed;
  c.log_every = run.log_every;
  c.comm_timeout = std::chrono::milliseconds(static_cast<int64_t>(run.comm_timeout * 1000));
  c.straggler_rank = run.straggler_rank;
  c.straggler_factor = run.straggler_factor;
  c.memory_limit = run.memory_limit.bytes;
  c.time_limit_s = run.time_limit;
  c.checkpoint.dir = run.checkpoint_dir;
  c.checkpoint.every = run.checkpoint_every;
  c.checkpoint.keep = run.checkpoint_keep;
  if (!run.checkpoint_dir.empty()) c.checkpoint.plan_json = plan_to_json(plan).dump();
  return c;
}

}  // namespace ptrain
