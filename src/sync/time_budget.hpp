#pragma once
// --time-limit for the parameter-server strategies: the training time a run
// has used, inside its epochs only (the evaluation between them excluded), so
// that strategies compare at the same wall time. Shard 0's coordinator keeps it.
#include <chrono>
#include <optional>

namespace ptrain {

class TimeBudget {
 public:
  // 0: no limit.
  explicit TimeBudget(double limit_seconds) : limit_(limit_seconds) {}
  void epoch_begins() {
    if (!started_) started_ = std::chrono::steady_clock::now();
  }
  void epoch_ends() {
    if (started_) used_ += std::chrono::steady_clock::now() - *started_;
    started_.reset();
  }
  bool spent() const {
    if (limit_ <= 0) return false;
    auto used = used_;
    if (started_) used += std::chrono::steady_clock::now() - *started_;
    return used.count() >= limit_;
  }

 private:
  double limit_;
  std::chrono::duration<double> used_{0};
  std::optional<std::chrono::steady_clock::time_point> started_;
};

}  // namespace ptrain
