#pragma once
// The run as it goes, as JSON lines (run.metrics): one object a line, each
// written and flushed as it happens, so that a reader (a plot, a dashboard, a
// scheduler) has everything up to the moment a run stopped, however it
// stopped; a kill loses at most the line being written. A run started afresh
// begins the file; a resumed run, and each rollback or restart inside one,
// appends to it, each part beginning with its "start" line.
//   {"event":"start","pid":4711,"started_at":"...","resumed_from":null,"model":"mlp","parameters":101770,
//    "workers":4,"train_samples":60000,"test_samples":10000,"task":"classification","plan":{...}}
//   {"event":"step","step":40,"epoch":1,"loss":0.52,"seconds":0.81}    (worker 0's, every `every` steps)
//   {"event":"checkpoint","step":60,"manifest":"ckpt/step-000000000060.ckpt"}   (committed)
//   {"event":"epoch","epoch":1,"steps":469,"train_loss":...,"test_loss":...,"test_accuracy":...,
//    "test_perplexity":...,"samples_per_s":...,"seconds":...}
//   {"event":"loss_check","updates":2000,"seconds":0.4,"loss":0.61}    (shared-memory strategies)
//   {"event":"warning","message":"..."}
//   {"event":"recovery","kind":"rollback","why":"...","from":"...","lr":0.025}
//   {"event":"end","outcome":"trained","steps":702,"samples":...,"train_seconds":...,"samples_per_s":...,
//    "final_test_accuracy":...,"final_train_loss":...}                  (outcome: or "diverged")
//   {"event":"error","message":"..."}                                   (the run failed)
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "plan/run_plan.hpp"
#include "shm/async_sgd.hpp"
#include "run/trainer.hpp"

namespace ptrain {

struct RunStart;

class MetricsStream {
 public:
  // `path`: "-" (standard output), a regular file or a new one (run()
  // checks it first: RunRecording::check), never through a symlink and never
  // a FIFO, socket or device. `append`: go on after what the file holds; else
  // begin it anew.
  MetricsStream(const std::string& path, const std::string& label, bool append);
  ~MetricsStream();
  MetricsStream(const MetricsStream&) = delete;
  MetricsStream& operator=(const MetricsStream&) = delete;

  // A "step" line is written every `every` steps (1: each).
  void start(const RunStart& s, const RunPlan& plan, size_t every);
  void step(const StepDone& s);
  void checkpoint(const CheckpointDone& c);
  void epoch(const EpochMetrics& m);
  void loss_check(const LossCheck& c);
  void warning(const std::string& message);
  void recovery(const Recovery& r);
  void end(const RunResult& r);
  void error(const std::string& message);

 private:
  void line(const nlohmann::ordered_json& object);

  std::string path_, label_;
  std::FILE* out_ = nullptr;
  bool owned_ = false;
  bool failed_ = false;  // a write failed: said once, then no more lines
  size_t every_ = 1;
};

}  // namespace ptrain
