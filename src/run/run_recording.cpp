#include "run/run_recording.hpp"

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "run/timeline_file.hpp"

namespace ptrain {

RunRecording::RunRecording(const RunPlan& plan, World& world, bool resumed)
    : plan_(resolved_plan(plan, world)), world_(world), append_(resumed) {
  if (plan.run.timeline.empty()) return;
  timeline_ = std::make_unique<Timeline>();
  start_timeline_clocks(*timeline_, world.ranks.get());
  active_.emplace(*timeline_);
}

RunRecording::~RunRecording() = default;

void RunRecording::check(const RunPlan& plan, const World& world, Problems& problems) {
  if (!world.reports()) return;
  for (const auto& [field, path] : {std::pair{"run.metrics", plan.run.metrics}, {"run.timeline", plan.run.timeline}}) {
    if (path.empty() || path == "-") continue;  // check_plan refuses a timeline to standard output
    try {
      check_output_path(path, path);
    } catch (const Error& e) {
      problems.add(field, e.what());
    }
  }
}

MetricsStream* RunRecording::metrics() {
  if (!metrics_) metrics_ = std::make_unique<MetricsStream>(plan_.run.metrics, "run.metrics", append_);
  return metrics_.get();
}

namespace {

// `first` (if any), then `second`.
template <class Callback, class Also>
Callback then(const Callback& first, Also second) {
  return [first, second](const auto& what) {
    if (first) first(what);
    second(what);
  };
}

}  // namespace

RunCallbacks RunRecording::wrap(const RunCallbacks& callbacks) {
  if (plan_.run.metrics.empty() || !world_.reports()) return callbacks;
  RunCallbacks out = callbacks;
  const size_t every = plan_.run.log_every;
  out.on_start = then(callbacks.on_start, [this, every](const RunStart& s) { metrics()->start(s, plan_, every); });
  out.on_step = then(callbacks.on_step, [this](const StepDone& s) { metrics()->step(s); });
  out.on_epoch_end = then(callbacks.on_epoch_end, [this](const EpochMetrics& m) { metrics()->epoch(m); });
  out.on_checkpoint = then(callbacks.on_checkpoint, [this](const CheckpointDone& c) { metrics()->checkpoint(c); });
  out.on_loss_check = then(callbacks.on_loss_check, [this](const LossCheck& c) { metrics()->loss_check(c); });
  out.on_warning = then(callbacks.on_warning, [this](const std::string& w) { metrics()->warning(w); });
  return out;
}

void RunRecording::recovery(const Recovery& r) {
  if (metrics_) metrics_->recovery(r);
}

void RunRecording::finished(const RunResult& result) {
  if (metrics_) metrics_->end(result);
  if (!timeline_) return;
  active_.reset();  // every thread that recorded has finished
  const GatheredTimeline gathered = gather_timeline(*timeline_, world_.ranks.get());
  if (!world_.ranks || world_.ranks->rank() == 0) write_timeline_file(plan_.run.timeline, gathered);
}

void RunRecording::failed(const std::string& message) {
  if (metrics_) metrics_->error(message);
}

}  // namespace ptrain
