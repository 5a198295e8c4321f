#pragma once
// A run plan as JSON: what a plan file holds and what every run report embeds
// under "plan". Sections "model", "data", "optimizer", "strategy" and "codec"
// each hold "name" and that kind's own fields; "run" holds the run controls.
// A field left out keeps its default; an unknown field or section is an error
// (with the closest known name); // and /* */ comments are allowed.
#include <nlohmann/json.hpp>
#include <string>

#include "core/problems.hpp"
#include "plan/run_plan.hpp"

namespace ptrain {

nlohmann::json plan_to_json(const RunPlan& plan);

// Reads over `base` (the defaults, or a plan to override). Problems name the
// fields as "<where>: strategy.backup ..."; nothing is thrown.
RunPlan plan_from_json(const nlohmann::json& json, RunPlan base, const std::string& where, Problems& problems);

// A plan file, or a run report (its "plan"). Throws ptrain::Error naming the
// file and every problem, on one line.
RunPlan read_plan_file(const std::string& path);

}  // namespace ptrain
