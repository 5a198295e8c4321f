#pragma once
// What a run records besides its result, as its plan asks: the metrics stream
// (run.metrics, run/metrics_stream.hpp) and the timeline (run.timeline,
// run/timeline_file.hpp). run() makes one for the whole run, rollbacks and
// restarts included, and hands the trainer callbacks that feed it.
#include <memory>
#include <optional>
#include <string>

#include "core/problems.hpp"
#include "core/timeline.hpp"
#include "plan/run_plan.hpp"
#include "run/metrics_stream.hpp"
#include "run/run.hpp"
#include "run/world.hpp"

namespace ptrain {

class RunRecording {
 public:
  // Every rank constructs it at once: the ranks' timelines start on one
  // clock (run/timeline_file.hpp). `resumed`: the
  // metrics file is appended to, not begun anew.
  RunRecording(const RunPlan& plan, World& world, bool resumed);
  ~RunRecording();
  RunRecording(const RunRecording&) = delete;
  RunRecording& operator=(const RunRecording&) = delete;

  // The outputs can be written (on the reporting process, which writes them).
  static void check(const RunPlan& plan, const World& world, Problems& problems);

  // `callbacks` that also feed the metrics stream; they refer to this object.
  RunCallbacks wrap(const RunCallbacks& callbacks);
  void recovery(const Recovery& r);
  // The run ended with `result`: its last line, and the timeline gathered from
  // every rank and written (every rank calls it).
  void finished(const RunResult& result);
  // The run failed: its last line says why; no timeline is written.
  void failed(const std::string& message);

 private:
  // Opened at the first start; only the callbacks wrap() made (on the reporting process) ask.
  MetricsStream* metrics();

  RunPlan plan_;
  World& world_;
  bool append_;
  std::unique_ptr<MetricsStream> metrics_;
  std::unique_ptr<Timeline> timeline_;
  std::optional<ActiveTimeline> active_;
};

}  // namespace ptrain
