#include "cli/shm_command.hpp"

#include <fmt/format.h>

#include "model/blas_check.hpp"
#include "model/torch/model_factory.hpp"
#include "train/run_report.hpp"
#include "train/shm_run_report.hpp"

namespace ptrain {

CLI::App* add_shm_command(CLI::App& app, ShmCommandOptions& o) {
  auto* cmd = app.add_subcommand(
      "shm", "Shared-memory asynchronous SGD: threads train one model (seq, mutex, rwlock, hogwild, leashed)");
  cmd->option_defaults()->always_capture_default();
  auto& s = o.common.shm;
  cmd->add_option("--strategy", o.common.strategy, "seq, mutex, rwlock, hogwild or leashed");
  cmd->add_option("--threads", s.threads, "Threads sharing the model (seq: 1)");
  cmd->add_option("--batch", s.batch, "Mini-batch size per thread");
  cmd->add_option("--lr", s.optimizer.lr, "Step size of plain SGD");
  add_shm_options(*cmd, o.common);
  cmd->add_option("--report", o.report_path, "Write a JSON run report to this file");
  return cmd;
}

int run_shm_command(ShmCommandOptions& o) {
  check_shm_options(o.common);
  validate_shm_config(o.common.shm);
  if (!o.report_path.empty()) check_writable(o.report_path);
  const BlasInfo blas = detect_blas();
  set_compute_threads(1);
  const ShmSetup setup = load_shm_setup(o.common);
  const ShmConfig& s = o.common.shm;
  fmt::print("ptrain: {} model ({} parameters), {} with {} thread(s), batch {}, lr {}; BLAS {}\n", o.common.model.name,
             setup.parameters, to_string(s.algorithm), s.threads, s.batch, s.optimizer.lr,
             blas.library.empty() ? "not found" : blas.library);
  fmt::print("ptrain: data {}: {} training samples, loss measured on {}\n", o.common.data_dir,
             setup.train_set.size(), setup.loss_set.size());
  const ShmRun run = run_shm(s, setup, [](const LossCheck& c) {
    fmt::print("  updates {:>8}  {:>8.2f} s  training loss {:.4f}\n", c.updates, c.seconds, c.loss);
    std::fflush(stdout);
  });
  const AsyncSgdResult& r = run.result;
  const double applied = static_cast<double>(r.totals.applied);
  fmt::print("\nsummary\n");
  fmt::print("  strategy     {}, {} thread(s) x batch {}, lr {}\n", to_string(s.algorithm), s.threads, s.batch, s.optimizer.lr);
  fmt::print("  stopped by   {}{}\n", r.stopped_by, r.diverged ? ": " + r.diverged_why : "");
  if (s.target_loss > 0)
    fmt::print("  target       loss {} {}\n", s.target_loss,
               r.seconds_to_target ? fmt::format("reached in {:.2f} s", *r.seconds_to_target) : "not reached");
  fmt::print("  training     loss {:.4f} after {} updates in {:.2f} s ({:.0f} updates/s; {:.1f} s wall)\n",
             r.final_loss, r.totals.applied, r.train_seconds, r.train_seconds > 0 ? applied / r.train_seconds : 0.0,
             r.wall_seconds);
  fmt::print("  test         accuracy {:.2f}%  loss {:.4f}\n", 100 * run.test.accuracy, run.test.loss);
  fmt::print("  staleness    mean {:.2f}, p50 {}, p99 {}, max {}\n", r.staleness.mean(), r.staleness.quantile(0.5),
             r.staleness.quantile(0.99), r.staleness.max());
  if (s.algorithm == ShmAlgorithm::Leashed)
    fmt::print("  swaps        {:.3f} failed per update, {} gradient(s) dropped\n",
               applied > 0 ? static_cast<double>(r.totals.failed_swaps) / applied : 0.0, r.totals.dropped);
  if (s.algorithm == ShmAlgorithm::Mutex || s.algorithm == ShmAlgorithm::RwLock)
    fmt::print("  locks        {} contended acquisition(s)\n", r.totals.contended_locks);
  if (r.backoff_waits > 0)
    fmt::print("  backoff      {} wait(s), {:.1f} ms in all\n", r.backoff_waits, r.backoff_us / 1000);
  if (!o.report_path.empty()) {
    nlohmann::json config = shm_config_json(o.common, setup);
    config["blas"] = blas.library;
    write_json_file(o.report_path, make_shm_report(config, r, run.test));
    fmt::print("  report       {}\n", o.report_path);
  }
  return r.diverged ? 3 : 0;
}

}  // namespace ptrain
