#pragma once
// What the user sees while training: a progress bar per epoch on a terminal,
// plain lines otherwise, and one line per finished epoch.
#include <cstdio>

#include "train/trainer.hpp"

namespace ptrain {

class ProgressDisplay {
 public:
  explicit ProgressDisplay(std::FILE* out);
  void set_task(Task task) { task_ = task; }
  void progress(const Progress& p);
  void epoch_end(const EpochMetrics& m, size_t epochs);

 private:
  std::FILE* out_;
  bool terminal_;
  size_t last_quarter_ = 0;
  Task task_ = Task::Classification;  // plain output: the last quarter of the epoch reported
};

}  // namespace ptrain
