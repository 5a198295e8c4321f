#pragma once
// What the user sees while training: a progress bar per epoch on a terminal,
// with the time the run's training has left at its pace so far, plain lines
// otherwise (no escape codes in a log or under mpirun), and one line per
// finished epoch.
#include <cstdio>
#include <optional>
#include <string>

#include "core/stopwatch.hpp"
#include "run/trainer.hpp"

namespace ptrain {

class ProgressDisplay {
 public:
  explicit ProgressDisplay(std::FILE* out);
  void set_task(Task task) { task_ = task; }
  void progress(const Progress& p);
  void epoch_end(const EpochMetrics& m, size_t epochs);

 private:
  // "1:05" (or "1:02:05") left at the pace since the first report; nothing before a pace is known.
  std::string time_left(const Progress& p);

  std::FILE* out_;
  bool terminal_;
  Stopwatch since_first_;
  std::optional<size_t> first_step_;  // steps of the run at the first report (a resumed run starts past 0)
  size_t last_quarter_ = 0;
  Task task_ = Task::Classification;  // plain output: the last quarter of the epoch reported
};

}  // namespace ptrain
