#include "perfmodel/calibration.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/input_file.hpp"

namespace ptrain {

Calibration calibrate_from_report(const std::string& path, const StepModelConfig& model) {
  const std::string text = read_input_file(path, size_t{256} << 20, "a run report", "--calibrate " + path);
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(text);
  } catch (const std::exception&) {
    throw Error("--calibrate " + path + ": not JSON");
  }
  Calibration c;
  try {
    // The report schema of run/report.hpp: what ran under "run", the plan under "plan".
    const auto& ran = report.at("run");
    c.parameters = ran.at("parameters").get<double>();
    c.batch = report.at("plan").at("run").at("batch").get<size_t>();
    c.workers = ran.at("workers").get<size_t>();
    c.step_s = report.at("summary").at("mean_step_ms").get<double>() / 1000;
  } catch (const nlohmann::json::exception& e) {
    throw Error("--calibrate " + path + ": not a ptrain run report (" + std::string(e.what()) + ")");
  }
  if (c.batch < 1 || c.workers < 1 || !(c.parameters > 0) || !(c.step_s > 0))
    throw Error("--calibrate " + path + ": the report has no steps, workers or parameters");
  StepModelConfig m = model;
  m.parameters = c.parameters;
  m.batch = c.batch;
  // The threads a rank ran (reports before run.local_workers had one).
  const auto& plan_run = report.at("plan").at("run");
  if (plan_run.contains("local_workers") && plan_run.at("local_workers").is_number_unsigned())
    m.local_workers = plan_run.at("local_workers").get<size_t>();
  // As predict_step counts them: a single worker encodes only for parameter servers.
  const bool encodes = c.workers > 1 || through_servers(m.exchange);
  const double exchange = exchange_seconds(m, c.workers) + (encodes ? codec_seconds(m, c.workers) : 0);
  if (!(c.step_s > exchange))
    throw Error(fmt::format("--calibrate {}: its step ({:.3f} ms) is not longer than the modelled exchange ({:.3f} ms) "
                            "at {} Gbit/s; is the bandwidth right?",
                            path, c.step_s * 1000, exchange * 1000, m.bandwidth_bits_s / 1e9));
  c.compute_per_sample_s = (c.step_s - exchange) / static_cast<double>(c.batch);
  return c;
}

}  // namespace ptrain
