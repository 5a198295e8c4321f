#pragma once
// The JSON run report: the full configuration, per-epoch metrics, the loss
// every k steps, time, throughput and bytes communicated per worker.
#include <nlohmann/json.hpp>
#include <string>

#include "train/trainer.hpp"

namespace ptrain {

// A fingerprint (FNV-1a, 64 bits, hex) of parameters, so that two runs can be compared bit for bit.
std::string params_fingerprint(std::span<const float> params);

// `config` is the full configuration as the caller knows it (CLI options and all).
nlohmann::json make_run_report(const nlohmann::json& config, const RunResult& result);

// Writes to a temporary file beside `path` and renames it into place, so a
// failed run never leaves half a file. Throws ptrain::Error naming the option and path.
void write_text_file(const std::string& path, const std::string& text, const std::string& option = "--report");
void write_json_file(const std::string& path, const nlohmann::json& json);

// Fails early (before training) if `path` cannot be created; errors name `option`.
void check_writable(const std::string& path, const std::string& option = "--report");

}  // namespace ptrain
