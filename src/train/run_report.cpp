#include "train/run_report.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace ptrain {

namespace {

// A fingerprint of the final parameters, so that two runs can be compared bit for bit.
std::string fnv1a64_hex(std::span<const std::byte> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::byte b : bytes) h = (h ^ static_cast<uint64_t>(b)) * 0x100000001b3ull;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace

std::string params_fingerprint(std::span<const float> params) { return fnv1a64_hex(std::as_bytes(params)); }

void check_writable(const std::string& path, const std::string& option) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  if (fs::is_directory(p)) throw Error(option + " " + path + ": is a directory");
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir))
    throw Error(option + " " + path + ": directory " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw Error(option + " " + path + ": cannot write in " + dir.string() + " (" + std::strerror(errno) + ")");
}

void write_json_file(const std::string& path, const nlohmann::json& json) {
  write_text_file(path, json.dump(2) + "\n");
}

void write_text_file(const std::string& path, const std::string& text, const std::string& option) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error(option + " " + path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw Error(option + " " + path + ": cannot rename into place (" + why + ")");
  }
}

}  // namespace ptrain
