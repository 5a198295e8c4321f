#pragma once
// The JSON report of a shared-memory run: configuration, every loss check,
// staleness, swaps and locks, and how the run ended.
#include <nlohmann/json.hpp>

#include "core/model.hpp"
#include "shm/async_sgd.hpp"

namespace ptrain {

// Staleness and contention in one object (also used for the sweep's rows).
nlohmann::json shm_summary_json(const AsyncSgdResult& r, const Metrics& test);

nlohmann::json make_shm_report(const nlohmann::json& config, const AsyncSgdResult& r, const Metrics& test);

}  // namespace ptrain
