#include "plan/run_plan.hpp"

#include <fmt/format.h>

#include "core/compute_device.hpp"
#include "core/printable.hpp"
#include "plan/field_checks.hpp"

namespace ptrain {

namespace {

template <class Choice>
void check_choice(const Choice& choice, const std::string& section, Problems& problems) {
  std::visit([&](const auto& o) { check_field_ranges(o, section + ".", problems); }, choice);
}

// The milestones of a step decay: some, increasing, within the run; and the
// step decay's fields only with it. (That each is 1 or more, the field's own
// check says.)
void check_lr_schedule(const RunControls& run, Problems& problems) {
  const bool step = run.lr_decay == LrDecay::Step;
  if (step && run.lr_milestones.empty())
    problems.add("run.lr_milestones", ": the step decay needs the epochs after which to multiply lr by run.lr_gamma");
  if (!step && !run.lr_milestones.empty())
    problems.add("run.lr_milestones", fmt::format("applies only with run.lr_decay step (got {})",
                                                  enum_name(run.lr_decay)));
  if (!step && run.lr_gamma != RunControls{}.lr_gamma)
    problems.add("run.lr_gamma", fmt::format("applies only with run.lr_decay step (got {})", enum_name(run.lr_decay)));
  for (size_t i = 0; i < run.lr_milestones.size(); ++i) {
    const int64_t m = run.lr_milestones[i];
    if (i > 0 && m <= run.lr_milestones[i - 1]) {
      problems.add("run.lr_milestones", fmt::format("must increase (got {} after {})", m, run.lr_milestones[i - 1]));
      break;
    }
    if (static_cast<double>(m) >= run.epochs) {
      problems.add("run.lr_milestones",
                   fmt::format("{}: the run ends after {:g} epoch{}, so lr would never change there", m, run.epochs,
                               run.epochs == 1 ? "" : "s"));
      break;
    }
  }
}

}  // namespace

Problems check_plan(const RunPlan& plan) {
  Problems problems;
  check_choice(plan.model, "model", problems);
  check_choice(plan.data, "data", problems);
  check_field_ranges(plan.data_controls, "data.", problems);
  check_choice(plan.optimizer, "optimizer", problems);
  check_choice(plan.strategy, "strategy", problems);
  check_choice(plan.codec, "codec", problems);
  check_choice(plan.pull, "pull", problems);
  check_field_ranges(plan.run, "run.", problems);

  const RunControls& run = plan.run;
  const std::string strategy(StrategyRegistry::name_of(plan.strategy));
  if (run.workers > 0) check_strategy(plan.strategy, run.workers, "strategy.", problems);
  if (compresses(plan.codec) && !takes_codec(plan.strategy))
    problems.add("codec", fmt::format(": the {} strategy exchanges no gradients to compress (got codec {})",
                                      strategy, CodecRegistry::name_of(plan.codec)));
  else if (compresses(plan.codec) && run.workers > 0 && pipeline_stages_of(plan.strategy, run.workers) == run.workers)
    problems.add("codec", fmt::format(": one pipeline of {} stages exchanges no gradients to compress (got codec {}); "
                                      "the codec applies between pipelines (more workers than stages)",
                                      run.workers, CodecRegistry::name_of(plan.codec)));
  if (compresses_pulls(plan.pull) && servers_of(plan.strategy) == 0)
    problems.add("pull", fmt::format(": the {} strategy pulls no parameters from servers (got pull {}; the parameter "
                                     "servers do: {})",
                                     strategy, PullCodecRegistry::name_of(plan.pull), strategies_with_servers()));
  bool correction_required = false;
  if (takes_momentum(plan.codec, &correction_required) && correction_required &&
      !std::holds_alternative<MomentumOptions>(plan.optimizer))
    problems.add("codec.momentum_correction",
                 fmt::format("on needs the momentum optimizer, whose momentum it takes over (got optimizer {})",
                             OptimizerRegistry::name_of(plan.optimizer)));
  if (run.time_limit > 0 && !stops_on_time(plan.strategy))
    problems.add("run.time_limit", fmt::format("applies to the strategies that stop on time (the parameter "
                                               "servers), not {}",
                                               strategy));
  if (run.local_workers > 1 && run.backend == Backend::Local)
    problems.add("run.local_workers",
                 fmt::format("{}: runs worker threads inside MPI ranks (under mpirun); on threads alone the workers "
                             "are run.workers",
                             run.local_workers));
  if (run.local_workers > 1 && !runs_local_workers(plan.strategy))
    problems.add("run.local_workers",
                 fmt::format("{}: the {} strategy runs one worker per MPI rank (worker threads in ranks: hybrid)",
                             run.local_workers, strategy));
  if (run.transport == Transport::Gloo && run.backend == Backend::Local)
    problems.add("run.transport", "gloo: carries MPI ranks' all-reduces (under mpirun); threads of one process share "
                                  "memory instead");
  if (run.transport == Transport::Gloo && servers_of(plan.strategy) > 0)
    problems.add("run.transport",
                 fmt::format("gloo: carries the all-reduces between worker ranks; the {} strategy's traffic goes to "
                             "its parameter servers, over MPI (use transport mpi)",
                             strategy));
  if (run.workers > 0 && run.local_workers > 1 && run.workers % run.local_workers != 0)
    problems.add("run.workers", fmt::format("{} is not a multiple of run.local_workers {} (ranks x threads)",
                                            run.workers, run.local_workers));
  if (run.straggler_rank >= 0 && run.workers > 0 && run.straggler_rank >= run.workers)
    problems.add("run.straggler_rank",
                 fmt::format("is no worker among {} workers (got {})", run.workers, run.straggler_rank));
  if (run.straggler_rank >= 0 && shared_memory_config(plan.strategy))
    problems.add("run.straggler_rank", fmt::format("applies to the trainer's workers, not the threads of the "
                                                   "shared-memory strategy {}",
                                                   strategy));
  if (run.log_every != RunControls{}.log_every && shared_memory_config(plan.strategy))
    problems.add("run.log_every", fmt::format("applies to the trainer's workers; the shared-memory strategy {} "
                                              "records the loss at each loss check (strategy.check_every)",
                                              strategy));
  if (run.timeline == "-")
    problems.add("run.timeline", "- : a timeline is written whole when the run ends, to a file; give its path");
  if (!run.metrics.empty() && run.metrics != "-" && run.metrics == run.timeline)
    problems.add("run.timeline", fmt::format("{}: is also run.metrics; give each its own file", run.timeline));
  if (!run.checkpoint_every.off() && run.checkpoint_dir.empty())
    problems.add("run.checkpoint_every", "applies only with a checkpoint directory (run.checkpoint_dir)");
  if (!run.checkpoint_dir.empty() && !checkpoints(plan.strategy))
    problems.add("run.checkpoint_dir", fmt::format(": the {} strategy does not write checkpoints yet ({} do)", strategy,
                                                   strategies_with_checkpoints()));
  if (run.on_diverge == OnDiverge::Rollback && run.checkpoint_dir.empty())
    problems.add("run.on_diverge", "rollback needs checkpoints to roll back to (run.checkpoint_dir)");
  if (run.on_diverge != OnDiverge::Rollback && run.rollback_lr_scale != RunControls{}.rollback_lr_scale)
    problems.add("run.rollback_lr_scale", "applies only with run.on_diverge rollback");
  if (run.max_restarts > 0 && run.checkpoint_dir.empty())
    problems.add("run.max_restarts", ": restarts go on from the last checkpoint, so it needs run.checkpoint_dir");
  if (run.max_restarts > 0 && run.backend == Backend::Mpi)
    problems.add("run.max_restarts",
                 ": restarts in the same process work on threads; under mpirun restart the job with --resume (exit "
                 "status 75 says when)");
  if (const auto device = parse_compute_device(run.device); !device) {
    problems.add("run.device", fmt::format(": expected cpu, cuda or cuda:N, got '{}'", printable(run.device)));
  } else if (device->cuda) {
    if (shared_memory_config(plan.strategy))
      problems.add("run.device",
                   fmt::format("{}: the {} strategy is a CPU algorithm (threads updating one copy of the parameters "
                               "in host memory); use cpu",
                               run.device, strategy));
    if (std::holds_alternative<SoftmaxOptions>(plan.model))
      problems.add("run.device", fmt::format("{}: model softmax is ptrain's own CPU code; mlp, cnn and torchscript "
                                             "run on a GPU",
                                             run.device));
  }
  if (run.batch >= 1 && run.microbatches > run.batch)
    problems.add("run.microbatches", fmt::format(": {} micro-batches need a batch of at least {} samples per worker "
                                                 "(run.batch is {})",
                                                 run.microbatches, run.microbatches, run.batch));
  if (run.microbatches > 1 && shared_memory_config(plan.strategy))
    problems.add("run.microbatches", fmt::format("applies to the trainer's workers; the shared-memory strategy {} "
                                                 "applies each thread's gradient as it comes",
                                                 strategy));
  if (run.straggler_rank >= 0 && pipeline_stages_of(plan.strategy, std::max(run.workers, 1)) > 0)
    problems.add("run.straggler_rank", fmt::format("slows a worker's whole forward and backward pass; the {} "
                                                   "strategy runs its stages a micro-batch at a time",
                                                   strategy));
  if (run.memory_limit.bytes > 0 && shared_memory_config(plan.strategy))
    problems.add("run.memory_limit", fmt::format("applies to the trainer's workers; the threads of the shared-memory "
                                                 "strategy {} share one copy of the parameters",
                                                 strategy));
  if (run.straggler_rank < 0 && run.straggler_factor != 1)
    problems.add("run.straggler_factor", "applies only with a straggler (run.straggler_rank)");
  check_lr_schedule(run, problems);
  return problems;
}

Effective effective_optimizer_and_codec(const RunPlan& plan) {
  Effective e{optimizer_config(plan.optimizer), CodecConfig{plan.codec, plan.run.seed, 0},
              plan.pull};
  e.optimizer.schedule = LrSchedule{plan.run.lr_decay, plan.run.lr_milestones, plan.run.lr_gamma, plan.run.epochs};
  if (takes_momentum(plan.codec) && e.optimizer.kind == OptimizerKind::Momentum) {
    e.codec.momentum = e.optimizer.momentum;
    e.optimizer.kind = OptimizerKind::Sgd;
  }
  return e;
}

}  // namespace ptrain
