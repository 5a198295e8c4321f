#pragma once
// Exponential backoff for contended locks and failed swaps. Each thread owns
// one; it waits by yielding until a deadline, since sleeping would round the
// microsecond waits up to the scheduler's tick.
#include <cstdint>
#include <string_view>

#include "core/rng.hpp"
#include "core/state_stream.hpp"
#include "shm/shm_config.hpp"

namespace ptrain {

class Backoff {
 public:
  Backoff(const BackoffConfig& config, uint64_t seed);

  bool enabled() const { return config_.kind != BackoffKind::None; }
  // Waits (nothing for BackoffKind::None) and doubles the next wait, up to the bound.
  void wait();
  // After a success: the next wait starts from the minimum again.
  void reset() { delay_us_ = config_.min_us; }

  uint64_t waits() const { return waits_; }
  double waited_us() const { return waited_us_; }  // total time waited

  // The wait wait() would take now (for tests): delay, or a uniform fraction of it with jitter.
  double next_wait_us();

  // Its generator, the next delay and the counts, for checkpoints; records named `prefix`...
  void save_state(StateWriter& out, std::string_view prefix) const;
  void load_state(StateReader& in, std::string_view prefix);

 private:
  BackoffConfig config_;
  Rng rng_;
  double delay_us_;
  uint64_t waits_ = 0;
  double waited_us_ = 0;
};

}  // namespace ptrain
