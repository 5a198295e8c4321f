#include "cli/train_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <regex>

#include "cli/path_option.hpp"
#include "cli/progress_display.hpp"
#include "cli/terminal.hpp"
#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "model/blas_check.hpp"
#include "plan/plan_json.hpp"
#include "run/report.hpp"
#include "run/resume.hpp"
#include "run/run.hpp"
#include "run/world.hpp"
#include "run/result_file.hpp"

namespace ptrain {

namespace {

std::string mib(uint64_t bytes) {
  return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

std::string kib(double bytes) { return fmt::format("{:.1f} KiB", bytes / 1024.0); }

// Staleness and what the servers dropped, from shard 0 (every shard applies the
// same gradients), and what all shards' links carried.
void print_server_summary(const RunPlan& plan, const RunResult& result) {
  const ServerStats& s = result.servers.front();
  fmt::print("  servers      {} shard(s), {} updates of {} gradients applied", result.servers.size(), s.updates,
             s.applied());
  if (s.dropped_late > 0) fmt::print(", {} late ones dropped", s.dropped_late);
  if (s.dropped_stale > 0) fmt::print(", {} stale ones dropped", s.dropped_stale);
  fmt::print("\n  staleness    mean {:.2f}, p99 {}, max {}", s.mean_staleness(), s.staleness_quantile(0.99),
             s.max_staleness());
  if (s.max_clock_gap > 0) fmt::print("; widest ssp gap {} steps", s.max_clock_gap);
  fmt::print("\n");
  std::string steps;
  for (size_t w = 0; w < result.worker_steps.size(); ++w)
    steps += fmt::format("{}{}", w ? " " : "", result.worker_steps[w]);
  fmt::print("  worker steps {}\n", steps);
  const ServerTraffic traffic = server_traffic(result);
  fmt::print("  traffic      {} pushed and {} pulled a step", kib(traffic.pushed_per_step()),
             kib(traffic.pulled_per_step()));
  if (compresses_pulls(plan.pull))
    fmt::print(" (pull {}: {:.2f}x fewer bytes than dense, {} of {} pulls dense)", PullCodecRegistry::name_of(plan.pull),
               traffic.pull_ratio(), traffic.pulled.dense_pulls, traffic.pulled.pulls);
  fmt::print("\n");
  if (s.step_batches.bins.size() > 2) {  // a stale-gradient rule grew some steps' batches
    std::string sizes;
    for (size_t m = 1; m < s.step_batches.bins.size(); ++m)
      if (const uint64_t steps_of_m = s.step_batches.bins[m]; steps_of_m > 0)
        sizes += fmt::format("{}{} x {}", sizes.empty() ? "" : ", ", steps_of_m, m);
    fmt::print("  step batches {} base batches\n", sizes);
  }
}

void print_summary(const RunPlan& plan, const RunResult& result) {
  uint64_t sent = 0;
  for (const auto& c : result.comm) sent = std::max(sent, c.bytes_sent);
  const double accuracy = result.epochs.empty() ? 0.0 : result.epochs.back().test_accuracy;
  fmt::print("\nsummary\n");
  fmt::print("  model        {} ({} parameters)\n", result.model, result.parameters);
  const std::string schedule = describe(effective_optimizer_and_codec(plan).optimizer.schedule);
  fmt::print("  strategy     {}, {} workers x batch {}, {} lr {}{}\n", StrategyRegistry::name_of(plan.strategy),
             plan.run.workers, plan.run.batch, OptimizerRegistry::name_of(plan.optimizer),
             optimizer_config(plan.optimizer).lr, schedule.empty() ? "" : " " + schedule);
  fmt::print("  steps        {} in {} epoch(s), {:.2f} ms each\n", result.steps, result.epochs.size(),
             result.steps > 0 ? 1000.0 * result.train_seconds / static_cast<double>(result.steps) : 0.0);
  for (const auto& [label, text] : result.notes) fmt::print("  {:<12} {}\n", label, text);
  if (result.task == Task::LanguageModel)
    fmt::print("  test         perplexity {:.3f}  loss {:.4f}  next-token accuracy {:.2f}%\n",
               result.epochs.empty() ? 0.0 : result.epochs.back().test_perplexity,
               result.epochs.empty() ? 0.0 : result.epochs.back().test_loss, 100 * accuracy);
  else
    fmt::print("  test         accuracy {:.2f}%  loss {:.4f}\n", 100 * accuracy,
               result.epochs.empty() ? 0.0 : result.epochs.back().test_loss);
  if (result.task == Task::LanguageModel)
    fmt::print("  throughput   {:.0f} tokens/s, {:.0f} samples/s of {} tokens ({:.1f} s training, {:.1f} s wall)\n",
               result.samples_per_s * static_cast<double>(tokens_per_sample(result)), result.samples_per_s,
               tokens_per_sample(result), result.train_seconds, result.wall_seconds);
  else
    fmt::print("  throughput   {:.0f} samples/s ({:.1f} s training, {:.1f} s wall)\n", result.samples_per_s,
               result.train_seconds, result.wall_seconds);
  if (!result.comm.empty()) fmt::print("  comm         {} sent by the busiest worker\n", mib(sent));
  fmt::print("  placement    {}\n", placement_summary(result.placement));
  if (compresses(plan.codec)) {
    CodecStats codec;
    for (const auto& c : result.codec) codec += c;
    fmt::print("  compression  {}: {:.1f}x (dense fp32 bytes / bytes on the wire)", CodecRegistry::name_of(plan.codec),
               codec.ratio());
    if (codec.steady_ratio() != codec.ratio()) fmt::print(", {:.1f}x after warm-up", codec.steady_ratio());
    if (codec.saturated > 0) fmt::print(", {} value(s) saturated", codec.saturated);
    if (codec.refinements > 0) fmt::print(", {} threshold refinement(s)", codec.refinements);
    fmt::print("\n");
  }
  if (!result.servers.empty()) print_server_summary(plan, result);
  for (const auto& why : result.left) fmt::print("  left         {}\n", why);
  for (const auto& r : result.recoveries)
    fmt::print("  {:<12} from {} with learning rate {:.6g}, after: {}\n", r.kind, r.from.empty() ? "the start" : r.from,
               r.lr, r.why);
  if (result.diverged) fmt::print("  diverged     {}\n", result.diverged_why);
  if (!plan.run.checkpoint_dir.empty()) fmt::print("  checkpoints  {}\n", plan.run.checkpoint_dir);
  if (!plan.run.save_model.empty())
    fmt::print("  saved        {} (ptrain eval --model {})\n", plan.run.save_model, plan.run.save_model);
}

// Where the run's files went, after the report's line.
void print_outputs(const RunPlan& plan) {
  if (!plan.run.metrics.empty() && plan.run.metrics != "-")
    fmt::print("  metrics      {} (JSON lines; ptrain plot {} -o loss.png)\n", plan.run.metrics, plan.run.metrics);
  if (!plan.run.timeline.empty())
    fmt::print("  timeline     {} (Chrome trace events: open in ui.perfetto.dev or chrome://tracing)\n",
               plan.run.timeline);
}

}  // namespace

std::string with_flags(const std::string& message, const RunPlan& plan) {
  static const std::regex field(R"(\b(model|data|optimizer|strategy|codec|run)\.([a-z_0-9]+)\b)");
  std::string out;
  auto begin = std::sregex_iterator(message.begin(), message.end(), field);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    if (!PlanFlags::is_field(it->str(), plan)) continue;  // model.pt in a path is no field
    out += message.substr(last, static_cast<size_t>(it->position()) - last);
    out += PlanFlags::flag_of(it->str(), plan);
    last = static_cast<size_t>(it->position() + it->length());
  }
  return out + message.substr(last);
}

namespace {

void add_output_options(CLI::App* cmd, TrainCommand& c) {
  cmd->add_option("--config", c.config_path,
                  "Start from this plan file or run report (its plan): the flags given here override it")
      ->group("Output")
      ->type_name("FILE")
      ->check(non_empty_path());
  cmd->add_option("--resume", c.resume_dir,
                  "Continue from the newest intact checkpoint in this directory, with its plan (flags may change "
                  "how long the run goes on, how it logs and checkpoints, and the learning rate); its checkpoints "
                  "go on into this directory unless --checkpoint-dir names another")
      ->group("Output")
      ->type_name("DIR")
      ->check(non_empty_path());
  cmd->add_option("--report", c.report_path, "Write the JSON run report to this file")
      ->group("Output")
      ->type_name("FILE")
      ->check(non_empty_path());
  cmd->add_flag("--print-plan", c.print_plan, "Print the plan as JSON (a plan file) and stop, without training")
      ->group("Output");
  cmd->add_flag("--quiet,-q", c.quiet, "Print nothing but errors (the report is still written)")->group("Output");
}

std::string shared_memory_strategies() {
  std::string out;
  for (auto name : StrategyRegistry::names())
    if (shared_memory_config(*StrategyRegistry::make(name))) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainCommand& c) {
  auto* cmd = app.add_subcommand(
      "train", "Train a model with several workers (threads, or MPI ranks under mpirun), by a run plan built from "
               "these flags, a plan file, or both");
  c.flags = std::make_unique<PlanFlags>(*cmd, PlanFlags::Scope{c.defaults, {}, {}});
  add_output_options(cmd, c);
  return cmd;
}

RunPlan shm_default_plan() {
  RunPlan plan;
  plan.model = MlpOptions{.hidden = {128, 128, 128}};
  plan.strategy = LeashedOptions{};
  plan.optimizer = SgdOptions{};
  plan.run.workers = 2;
  plan.run.batch = 16;
  plan.run.epochs = 10;
  return plan;
}

CLI::App* add_shm_command(CLI::App& app, TrainCommand& c) {
  auto* cmd = app.add_subcommand(
      "shm", "Shared-memory asynchronous SGD: threads of one process train one model (" + shared_memory_strategies() +
                 "); ptrain train with the defaults of the Leashed-SGD experiments");
  c.shared_memory_only = true;
  c.defaults = shm_default_plan();
  // --threads is its --workers: one flag, so that neither can be given and passed over.
  c.flags = std::make_unique<PlanFlags>(
      *cmd, PlanFlags::Scope{c.defaults, [](const StrategyChoice& s) { return shared_memory_config(s).has_value(); },
                             {"--workers"}});
  cmd->add_option("--threads", c.threads,
                  fmt::format("Threads sharing the model [default: {}]", c.defaults.run.workers))
      ->group("Run")
      ->check(CLI::Range(1, kMaxThreads))
      ->type_name("INT");
  add_output_options(cmd, c);
  return cmd;
}

namespace {

// The flags (over a plan file or a checkpoint's plan) to a checked plan.
RunPlan planned(const TrainCommand& c) {
  if (!c.resume_dir.empty() && !c.config_path.empty())
    throw Error("--resume takes the plan from its checkpoint: give the flags to change, not --config");
  RunPlan plan = c.defaults;
  if (!c.config_path.empty()) plan = read_plan_file(c.config_path);
  if (!c.resume_dir.empty()) {
    plan = checkpoint_plan(newest_checkpoint(c.resume_dir));
    plan.run.backend = Backend::Auto;  // threads then, ranks now: the state is the same
    // Checkpoints go on where the run resumed from (a copy, moved): --checkpoint-dir says otherwise.
    plan.run.checkpoint_dir = c.resume_dir;
  }
  Problems problems;
  plan = c.flags->apply(plan, problems);
  if (c.threads != -1) plan.run.workers = c.threads;
  problems.throw_if_any();
  if (c.shared_memory_only && !shared_memory_config(plan.strategy))
    throw Error(fmt::format("--strategy {}: ptrain shm runs the shared-memory strategies ({}); ptrain train runs "
                            "every strategy",
                            StrategyRegistry::name_of(plan.strategy), shared_memory_strategies()));
  const Problems checked = check_plan(plan);
  if (!checked.empty())  // the fields each problem names, and those its words name, as flags
    throw Error(with_flags(checked.joined([&](const std::string& field) {
      if (c.shared_memory_only && field == "run.workers") return std::string("--threads");
      return PlanFlags::flag_of(field, plan);
    }), plan));
  if (!c.report_path.empty() && !c.print_plan) check_writable(c.report_path);
  return plan;
}

}  // namespace

int run_train_command(TrainCommand& c, const std::vector<std::string>& command_line) {
  RunPlan plan;
  try {
    plan = planned(c);
  } catch (const InterruptedError&) {
    throw;
  } catch (const Error& e) {
    throw PlanError(e.what());  // found alike on every rank
  }
  if (c.print_plan) {
    fmt::print("{}\n", plan_to_json(plan).dump(2));
    return 0;
  }
  const std::string started_at = utc_now();
  try {
    World world = make_world(plan);
    const bool speaker = world.reports() && !c.quiet;
    const BlasInfo blas = detect_blas();
    if (blas.is_reference && world.reports())
      print_warning(fmt::format(
          "the reference BLAS is loaded ({}); training runs many times slower. Select OpenBLAS: "
          "update-alternatives --set libblas.so.3-x86_64-linux-gnu "
          "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3",
          blas.library));
    if (world.backend == Backend::Mpi && world.servers > 0 && !c.quiet) {
      fmt::print("ptrain: rank {} of {}: {}\n", world.rank(), world.ranks->size(),
                 world.is_server() ? fmt::format("parameter server shard {}", world.rank() - world.workers)
                                   : fmt::format("worker {}", world.rank()));
      std::fflush(stdout);
    }
    const RunPlan ran = resolved_plan(plan, world);
    ProgressDisplay display(stdout);
    size_t epochs = 0;  // the run's, as the progress reports tell
    RunCallbacks callbacks;
    callbacks.on_warning = [](const std::string& line) { print_warning(line); };
    if (speaker) {
      callbacks.on_start = [&](const RunStart& s) {
        fmt::print("ptrain: {} model ({} parameters), {} strategy, {}, {} compute thread(s) each; BLAS {}\n", s.model,
                   s.parameters, StrategyRegistry::name_of(plan.strategy), s.world->description(),
                   plan.run.threads_per_worker, blas.library.empty() ? "not found" : blas.library);
        fmt::print("ptrain: data {}: {} training and {} test samples; batch {} per {}\n",
                   DataRegistry::name_of(plan.data), s.train_samples, s.test_samples, plan.run.batch,
                   pipeline_stages_of(plan.strategy, 1) > 0 ? "pipeline (its stages take it together)" : "worker");
        display.set_task(s.task);
      };
      callbacks.on_progress = [&](const Progress& p) {
        epochs = p.epochs;
        display.progress(p);
      };
      callbacks.on_epoch_end = [&](const EpochMetrics& m) { display.epoch_end(m, std::max(epochs, m.epoch)); };
      callbacks.on_loss_check = [](const LossCheck& c) {
        fmt::print("  updates {:>8}  {:>8.2f} s  training loss {:.4f}\n", c.updates, c.seconds, c.loss);
        std::fflush(stdout);
      };
    }
    RunInputs inputs;
    inputs.resume = c.resume_dir;
    const RunResult result = run(plan, world, callbacks, inputs);
    const int status = result.diverged ? kExitDiverged : kExitOk;
    if (!world.reports()) return status;
    if (!c.quiet) print_summary(ran, result);
    if (!c.report_path.empty()) {
      write_json_file(c.report_path, make_report(ran, world, result, {command_line, started_at}));
      if (!c.quiet) fmt::print("  report       {}\n", c.report_path);
    }
    if (!c.quiet) print_outputs(ran);
    if (result.diverged) print_error("error", "training diverged: " + result.diverged_why);
    return status;
  } catch (const InterruptedError& e) {
    const std::string message = with_flags(e.what(), plan);
    throw InterruptedError(message);
  } catch (const PlanError& e) {
    const std::string message = with_flags(e.what(), plan);
    throw PlanError(message);
  } catch (const Error& e) {
    const std::string message = with_flags(e.what(), plan);
    throw Error(message);
  }
}

}  // namespace ptrain
