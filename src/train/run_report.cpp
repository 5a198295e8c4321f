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

nlohmann::json make_run_report(const nlohmann::json& config, const RunResult& r) {
  nlohmann::json report;
  report["config"] = config;
  auto& epochs = report["epochs"] = nlohmann::json::array();
  for (const auto& e : r.epochs)
    epochs.push_back({{"epoch", e.epoch},
                      {"steps", e.steps},
                      {"train_loss", e.train_loss},
                      {"test_loss", e.test_loss},
                      {"test_accuracy", e.test_accuracy},
                      {"seconds", e.seconds},
                      {"samples_per_s", e.samples_per_s}});
  auto& curve = report["loss_curve"] = nlohmann::json::array();
  for (const auto& p : r.loss_curve) curve.push_back({{"step", p.step}, {"loss", p.loss}});
  auto& comm = report["comm"] = nlohmann::json::array();
  CodecStats codec_total;
  for (size_t w = 0; w < r.comm.size(); ++w) {
    const CodecStats codec = w < r.codec.size() ? r.codec[w] : CodecStats{};
    codec_total += codec;
    comm.push_back({{"worker", w},
                    {"bytes_sent", r.comm[w].bytes_sent},
                    {"bytes_received", r.comm[w].bytes_received},
                    {"bytes_sent_per_step", r.steps > 0 ? r.comm[w].bytes_sent / r.steps : 0},
                    {"collectives", r.comm[w].collectives},
                    {"codec_dense_bytes", codec.dense_bytes},
                    {"codec_encoded_bytes", codec.encoded_bytes},
                    {"codec_saturated", codec.saturated},
                    {"codec_selected", codec.selected},
                    {"codec_refinements", codec.refinements}});
  }
  report["compression"] = {
      {"ratio", codec_total.ratio()},           {"steady_ratio", codec_total.steady_ratio()},
      {"dense_bytes", codec_total.dense_bytes}, {"encoded_bytes", codec_total.encoded_bytes},
      {"saturated", codec_total.saturated},     {"selected", codec_total.selected},
      {"refinements", codec_total.refinements}};
  if (!r.servers.empty()) {
    // Shard 0's record: every shard applies the same gradients, at about the same staleness.
    const ServerStats& s = r.servers.front();
    auto& ps = report["parameter_server"];
    ps = {{"shards", r.servers.size()},
          {"updates", s.updates},
          {"gradients_applied", s.applied()},
          {"dropped_late", s.dropped_late},
          {"dropped_stale", s.dropped_stale},
          {"max_ssp_gap", s.max_clock_gap},
          {"staleness_histogram", s.staleness.bins},
          {"staleness_mean", s.mean_staleness()},
          {"staleness_p99", s.staleness_quantile(0.99)},
          {"staleness_max", s.max_staleness()},
          {"worker_steps", r.worker_steps},
          {"left", r.left}};
    auto& shards = ps["per_shard"] = nlohmann::json::array();
    for (const auto& shard : r.servers)
      shards.push_back({{"updates", shard.updates},
                        {"gradients_applied", shard.applied()},
                        {"dropped_stale", shard.dropped_stale},
                        {"staleness_mean", shard.mean_staleness()},
                        {"staleness_max", shard.max_staleness()}});
  }
  report["summary"] = {
      {"steps", r.steps},
      {"samples", r.samples},
      {"train_seconds", r.train_seconds},
      {"mean_step_ms", r.steps > 0 ? 1000.0 * r.train_seconds / static_cast<double>(r.steps) : 0.0},
      {"wall_seconds", r.wall_seconds},
      {"samples_per_s", r.samples_per_s},
      {"final_test_accuracy", r.epochs.empty() ? 0.0 : r.epochs.back().test_accuracy},
      {"final_train_loss", r.epochs.empty() ? 0.0 : r.epochs.back().train_loss},
      {"final_params_fnv1a64", params_fingerprint(r.final_params)}};
  return report;
}

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
