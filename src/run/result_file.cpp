#include "run/result_file.hpp"

#include <cstdio>

#include "core/atomic_file.hpp"

namespace ptrain {

std::string bytes_fingerprint(std::span<const std::byte> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::byte b : bytes) h = (h ^ static_cast<uint64_t>(b)) * 0x100000001b3ull;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

std::string params_fingerprint(std::span<const float> params) { return bytes_fingerprint(std::as_bytes(params)); }

void check_writable(const std::string& path, const std::string& option) {
  check_output_path(path, option + " " + path);
}

void write_json_file(const std::string& path, const nlohmann::json& json) {
  write_text_file(path, json.dump(2) + "\n");
}

void write_text_file(const std::string& path, const std::string& text, const std::string& option) {
  write_file_atomically(path, std::as_bytes(std::span(text)), option + " " + path);
}

}  // namespace ptrain
