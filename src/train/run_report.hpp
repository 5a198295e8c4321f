#pragma once
// The JSON run report: the full configuration, per-epoch metrics, the loss
// every k steps, time, throughput and bytes communicated per worker.
#include <nlohmann/json.hpp>
#include <string>

#include "train/trainer.hpp"

namespace ptrain {

// `config` is the full configuration as the caller knows it (CLI options and all).
nlohmann::json make_run_report(const nlohmann::json& config, const RunResult& result);

// Writes to a temporary file beside `path` and renames it into place, so a
// failed run never leaves half a report. Throws ptrain::Error naming the path.
void write_json_file(const std::string& path, const nlohmann::json& json);

// Fails early (before training) if `path` cannot be created.
void check_writable(const std::string& path);

}  // namespace ptrain
