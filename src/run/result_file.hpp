#pragma once
// Writing reports and result files safely, and the parameters' fingerprint.
// (The run report's schema is run/report.hpp.)
#include <nlohmann/json.hpp>
#include <string>

#include <span>

namespace ptrain {

// A fingerprint (FNV-1a, 64 bits, hex) of parameters, so that two runs can be compared bit for bit.
std::string params_fingerprint(std::span<const float> params);
// The same of any bytes (a plan's JSON).
std::string bytes_fingerprint(std::span<const std::byte> bytes);

// Writes `path` atomically (core/atomic_file.hpp): a failed run never leaves
// half a file, and a symlink, FIFO or device is never written through.
// Throws ptrain::Error naming the option and path.
void write_text_file(const std::string& path, const std::string& text, const std::string& option = "--report");
void write_json_file(const std::string& path, const nlohmann::json& json);

// Fails early (before training) if `path` cannot be written as above; errors name `option`.
void check_writable(const std::string& path, const std::string& option = "--report");

}  // namespace ptrain
