#pragma once
// The run report, one schema for every command that trains (docs/report.md):
// schema_version, ptrain's version and commit, the host, the start time and
// command line, the whole plan as it ran (so `ptrain train --config REPORT`
// replays it), what ran (backend, workers, parameters, data), per-epoch
// metrics, the loss curve with a timestamp on every point, bytes on the wire,
// compression, parameter-server statistics and a summary.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/run_plan.hpp"
#include "run/world.hpp"
#include "run/trainer.hpp"

namespace ptrain {

inline constexpr int kReportSchemaVersion = 1;

struct ReportContext {
  std::vector<std::string> command_line;  // empty when the run came from the library
  std::string started_at;                 // UTC, ISO 8601 (utc_now())
};

// Now, as "2026-11-24T22:50:03Z".
std::string utc_now();

// The report's "ptrain" (version, commit) and "host" (name, cpu, cores, blas) sections.
nlohmann::json ptrain_json();
nlohmann::json host_json();

// `plan` as it ran (resolved_plan()).
nlohmann::json make_report(const RunPlan& plan, const World& world, const RunResult& result,
                           const ReportContext& context);

}  // namespace ptrain
