#include "train/shm_run_report.hpp"

#include "train/run_report.hpp"

namespace ptrain {

nlohmann::json shm_summary_json(const AsyncSgdResult& r, const Metrics& test) {
  const double applied = static_cast<double>(r.totals.applied);
  return {{"stopped_by", r.stopped_by},
          {"seconds_to_target", r.seconds_to_target ? nlohmann::json(*r.seconds_to_target) : nlohmann::json()},
          {"diverged", r.diverged},
          {"diverged_why", r.diverged_why},
          {"final_train_loss", r.final_loss},
          {"test_loss", test.loss},
          {"test_accuracy", test.accuracy},
          {"gradients", r.gradients},
          {"updates", r.totals.applied},
          {"dropped", r.totals.dropped},
          {"failed_swaps", r.totals.failed_swaps},
          {"failed_swaps_per_update", applied > 0 ? static_cast<double>(r.totals.failed_swaps) / applied : 0.0},
          {"contended_locks", r.totals.contended_locks},
          {"backoff_waits", r.backoff_waits},
          {"backoff_us", r.backoff_us},
          {"staleness_mean", r.staleness.mean()},
          {"staleness_p50", r.staleness.quantile(0.5)},
          {"staleness_p90", r.staleness.quantile(0.9)},
          {"staleness_p99", r.staleness.quantile(0.99)},
          {"staleness_max", r.staleness.max()},
          {"staleness_histogram", r.staleness.bins},
          {"train_seconds", r.train_seconds},
          {"wall_seconds", r.wall_seconds},
          {"updates_per_s", r.train_seconds > 0 ? applied / r.train_seconds : 0.0},
          {"cpus", r.cpus},
          {"final_params_fnv1a64", params_fingerprint(r.final_params)}};
}

nlohmann::json make_shm_report(const nlohmann::json& config, const AsyncSgdResult& r, const Metrics& test) {
  nlohmann::json report;
  report["config"] = config;
  auto& checks = report["loss_checks"] = nlohmann::json::array();
  for (const auto& c : r.checks) checks.push_back({{"updates", c.updates}, {"seconds", c.seconds}, {"loss", c.loss}});
  report["summary"] = shm_summary_json(r, test);
  return report;
}

}  // namespace ptrain
