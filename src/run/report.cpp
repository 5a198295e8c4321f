#include "run/report.hpp"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

#include "model/blas_check.hpp"
#include "plan/plan_json.hpp"
#include "run/build_info.hpp"
#include "run/result_file.hpp"

namespace ptrain {

namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

}  // namespace

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

nlohmann::json ptrain_json() { return {{"version", build_info().version}, {"commit", build_info().commit}}; }

nlohmann::json host_json() {
  return {{"name", host_name()},
          {"cpu", cpu_model()},
          {"cores", std::thread::hardware_concurrency()},
          {"blas", detect_blas().library}};
}

namespace {

// Per stage of each pipeline, per step where the name says so.
nlohmann::json pipeline_json(const std::vector<PipelineStageStats>& stages) {
  auto out = nlohmann::json::array();
  for (const PipelineStageStats& s : stages) {
    const double steps = static_cast<double>(std::max<uint64_t>(s.steps, 1));
    out.push_back({{"stage", s.stage},
                   {"pipeline", s.group},
                   {"first_layer", s.first_layer},
                   {"end_layer", s.end_layer},
                   {"parameters", s.parameters},
                   {"steps", s.steps},
                   {"compute_ms_per_step", 1e3 * s.compute_seconds / steps},
                   {"idle_ms_per_step", 1e3 * s.idle_seconds / steps},
                   {"allreduce_ms_per_step", 1e3 * s.allreduce_seconds / steps},
                   {"optimizer_ms_per_step", 1e3 * s.optimizer_seconds / steps},
                   {"idle_fraction", s.idle_fraction()},
                   {"bytes_sent_per_step", static_cast<double>(s.bytes_sent) / steps},
                   {"allreduce_bytes_sent_per_step", static_cast<double>(s.allreduce_bytes_sent) / steps},
                   {"bytes_received_per_step", static_cast<double>(s.bytes_received) / steps},
                   {"peak_activation_bytes", s.peak_activation_bytes},
                   {"micro_batches_in_flight", s.micro_batches_in_flight},
                   {"state_bytes", s.state_bytes},
                   {"peak_bytes", s.state_bytes + s.peak_activation_bytes}});
  }
  return out;
}

nlohmann::json shared_memory_json(const AsyncSgdResult& r) {
  const double applied = static_cast<double>(r.totals.applied);
  return {{"stopped_by", r.stopped_by},
          {"seconds_to_target", r.seconds_to_target ? nlohmann::json(*r.seconds_to_target) : nlohmann::json()},
          {"diverged", r.diverged},
          {"diverged_why", r.diverged_why},
          {"final_train_loss", r.final_loss},
          {"gradients", r.gradients},
          {"thread_gradients", r.thread_gradients},
          {"updates", r.totals.applied},
          {"updates_per_s", r.train_seconds > 0 ? applied / r.train_seconds : 0.0},
          {"dropped", r.totals.dropped},
          {"failed_swaps", r.totals.failed_swaps},
          {"failed_swaps_per_update", applied > 0 ? static_cast<double>(r.totals.failed_swaps) / applied : 0.0},
          {"contended_locks", r.totals.contended_locks},
          {"backoff_waits", r.backoff_waits},
          {"backoff_us", r.backoff_us},
          {"staleness_mean", r.staleness.mean()},
          {"staleness_p50", r.staleness.quantile(0.5)},
          {"staleness_p90", r.staleness.quantile(0.9)},
          {"staleness_p99", r.staleness.quantile(0.99)},
          {"staleness_max", r.staleness.max()},
          {"staleness_histogram", r.staleness.bins},
          {"cpus", r.cpus}};
}

// Where the threads went: planned, and bound or not.
nlohmann::json placement_json(const PlacementRecord& p) {
  auto threads = nlohmann::json::array();
  for (const PlacedThread& t : p.threads)
    threads.push_back({{"role", t.role},
                       {"index", t.index},
                       {"cpu", t.place.cpu},
                       {"core", t.place.core},
                       {"node", t.place.node},
                       {"bound", t.bound}});
  nlohmann::json shared;  // null: not a shared-memory strategy, or not placed
  if (!p.shared_nodes.empty())
    shared = {{"nodes", p.shared_nodes}, {"policy", p.shared_nodes.size() == 1 ? "bind" : "interleave"}};
  return {{"policy", field_text(p.policy)}, {"topology", p.topology},       {"numa_nodes", p.numa_nodes},
          {"cores", p.cores},               {"applied", p.applied},         {"note", p.note},
          {"threads", threads},             {"shared_parameters", shared}};
}

}  // namespace

nlohmann::json make_report(const RunPlan& plan, const World& world, const RunResult& r,
                           const ReportContext& context) {
  nlohmann::json report;
  report["schema_version"] = kReportSchemaVersion;
  report["ptrain"] = ptrain_json();
  report["host"] = host_json();
  report["started_at"] = context.started_at;
  report["command_line"] = context.command_line;
  report["plan"] = plan_to_json(plan);
  report["run"] = {{"backend", field_text(world.backend)},
                   {"transport", world.transport},
                   {"workers", world.workers},
                   {"local_workers", world.local_workers},
                   {"servers", world.servers},
                   {"model", r.model},
                   {"task", r.task == Task::LanguageModel ? "language-model" : "classification"},
                   {"classes", r.model_input.classes},  // or the vocabulary's size
                   {"parameters", r.parameters},
                   {"train_samples", r.train_samples},
                   {"test_samples", r.test_samples}};
  auto& epochs = report["epochs"] = nlohmann::json::array();
  for (const auto& e : r.epochs)
    epochs.push_back({{"epoch", e.epoch},
                      {"steps", e.steps},
                      {"train_loss", e.train_loss},
                      {"test_loss", e.test_loss},
                      {"test_accuracy", e.test_accuracy},
                      {"test_perplexity", e.test_perplexity},
                      {"seconds", e.seconds},
                      {"samples_per_s", e.samples_per_s}});
  auto& curve = report["loss_curve"] = nlohmann::json::array();
  if (r.shared_memory) {
    // The shared model's training loss on the loss set, after `step` updates of all threads.
    for (const auto& c : r.shared_memory->checks)
      curve.push_back({{"step", c.updates}, {"loss", c.loss}, {"seconds", c.seconds}});
  } else {
    for (const auto& p : r.loss_curve)
      curve.push_back({{"step", p.step},
                       {"loss", p.loss},
                       // Under ssp and async other workers may take more steps than worker 0, whose clock this is.
                       {"seconds", p.step <= r.step_seconds.size() ? nlohmann::json(r.step_seconds[p.step - 1])
                                                                   : nlohmann::json()}});
  }
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
          {"step_batches_histogram", s.step_batches.bins},
          {"worker_steps", r.worker_steps},
          {"left", r.left}};
    const ServerTraffic traffic = server_traffic(r);
    ps["bytes_pushed"] = traffic.pushed_bytes;
    ps["bytes_pulled"] = traffic.pulled.wire_bytes;
    ps["bytes_pulled_dense"] = traffic.pulled.dense_bytes;
    ps["bytes_pushed_per_step"] = traffic.pushed_per_step();
    ps["bytes_pulled_per_step"] = traffic.pulled_per_step();
    ps["pull_ratio"] = traffic.pull_ratio();
    ps["pulls"] = traffic.pulled.pulls;
    ps["dense_pulls"] = traffic.pulled.dense_pulls;
    auto& shards = ps["per_shard"] = nlohmann::json::array();
    for (const auto& shard : r.servers)
      shards.push_back({{"updates", shard.updates},
                        {"gradients_applied", shard.applied()},
                        {"dropped_stale", shard.dropped_stale},
                        {"staleness_mean", shard.mean_staleness()},
                        {"staleness_max", shard.max_staleness()},
                        {"bytes_pushed", shard.pushed_bytes},
                        {"bytes_pulled", shard.pulled.wire_bytes}});
  }
  if (!r.pipeline.empty()) report["pipeline"] = pipeline_json(r.pipeline);
  if (r.shared_memory) report["shared_memory"] = shared_memory_json(*r.shared_memory);
  // Seed 002's claim, measured: what moving data in and out of the GPU costs a step.
  const DeviceTraffic& t = r.device_traffic;
  const double steps = static_cast<double>(std::max<uint64_t>(t.steps, 1));
  report["placement"] = placement_json(r.placement);
  report["device"] = {{"name", r.device},
                      {"host_to_device_bytes_per_step", static_cast<double>(t.to_device_bytes) / steps},
                      {"device_to_host_bytes_per_step", static_cast<double>(t.to_host_bytes) / steps},
                      {"copy_seconds_per_step", t.seconds / steps}};
  report["checkpoints"] = {{"written", r.checkpoints},
                           {"resumed_from", r.resumed_from.empty() ? nlohmann::json() : nlohmann::json(r.resumed_from)},
                           {"resumed_at_step", r.resumed_at_step}};
  auto& outcome = report["outcome"] = {{"status", r.diverged ? "diverged" : "completed"},
                                       {"diverged_why", r.diverged ? nlohmann::json(r.diverged_why) : nlohmann::json()}};
  auto& recoveries = outcome["recoveries"] = nlohmann::json::array();
  for (const auto& rec : r.recoveries)
    recoveries.push_back({{"kind", rec.kind},
                          {"why", rec.why},
                          {"from", rec.from.empty() ? nlohmann::json() : nlohmann::json(rec.from)},
                          {"lr", rec.lr}});
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
  if (r.task == Task::LanguageModel) {  // its figure, and its samples counted in tokens
    report["summary"]["final_test_perplexity"] = r.epochs.empty() ? 0.0 : r.epochs.back().test_perplexity;
    report["summary"]["tokens_per_s"] = r.samples_per_s * static_cast<double>(tokens_per_sample(r));
  }
  auto& notes = report["summary"]["notes"] = nlohmann::json::object();
  for (const auto& [label, text] : r.notes) notes[label] = text;
  return report;
}

}  // namespace ptrain
