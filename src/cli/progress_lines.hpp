#pragma once
// Progress as JSON lines, for a program to follow (a scheduler, a dashboard,
// tools/fault_campaign.sh): one object a line, written and flushed as each
// thing happens, so that a reader has every step up to the moment a run
// stopped, however it stopped. The file is appended to: a run and the runs
// that resume it write one file, each beginning with its "start" line.
//   {"event":"start","pid":4711,"resumed_from":null}        (or the checkpoint's manifest)
//   {"event":"step","step":41,"epoch":1,"loss":0.52,"seconds":0.81}      (after each of worker 0's steps)
//   {"event":"checkpoint","step":60,"manifest":"ckpt/step-000000000060.ckpt"}   (committed)
//   {"event":"epoch","epoch":1,"train_loss":...,"test_loss":...,"test_accuracy":...,"samples_per_s":...,"seconds":...}
//   {"event":"loss_check","updates":2000,"seconds":0.4,"loss":0.61}      (shared-memory strategies)
//   {"event":"end","outcome":"trained","steps":702}                     (or "diverged")
//   {"event":"error","exit_status":75,"message":"..."}
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "run/run.hpp"

namespace ptrain {

class ProgressLines {
 public:
  // Throws ptrain::Error naming --progress-lines when `path` cannot be used:
  // it must be "-" (standard output) or a regular file or a new one, never
  // through a symlink, and never a FIFO, socket or device.
  static void check(const std::string& path);
  explicit ProgressLines(const std::string& path);
  ~ProgressLines();
  ProgressLines(const ProgressLines&) = delete;
  ProgressLines& operator=(const ProgressLines&) = delete;

  void start(const RunStart& s);
  void step(const StepDone& s);
  void checkpoint(const CheckpointDone& c);
  void epoch(const EpochMetrics& m);
  void loss_check(const LossCheck& c);
  void end(const RunResult& r);
  void error(int exit_status, const std::string& message);

 private:
  void line(const nlohmann::ordered_json& object);

  std::string path_;
  std::FILE* out_ = nullptr;
  bool owned_ = false;
  bool failed_ = false;  // a write failed: said once, then no more lines
};

}  // namespace ptrain
