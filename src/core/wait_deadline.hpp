#pragma once
// A deadline for waiting on another worker that does not count the time this
// process stood still. A process stopped (SIGSTOP, ^Z, a debugger, a frozen
// container) and continued later finds every clock moved on; a plain deadline
// would then time out at once, blaming a peer that was stopped with it and is
// about to answer. Here the waiter asks at least every kSlice, and only the
// time it was there to see counts: a gap between two questions longer than a
// slice by kStandstill says the process did not run, and counts as one slice.
// A peer is given up on once the timeout has passed in the time that counts.
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace ptrain {

class WaitDeadline {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kSlice{100};
  static constexpr std::chrono::milliseconds kStandstill{1000};

  // `timeout` from now; longer than a year is a year.
  explicit WaitDeadline(std::chrono::milliseconds timeout);

  // True once the timeout has passed. Callers ask at least every kSlice.
  bool passed();
  // How long the next wait may be: a slice, or less when the deadline is nearer.
  Clock::duration slice() const;
  // Waits on `cv` until `ready()` or the deadline passes; returns ready().
  template <class Ready>
  bool wait(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Ready ready) {
    while (!ready()) {
      if (passed()) return ready();
      cv.wait_for(lock, slice(), ready);
    }
    return true;
  }

 private:
  Clock::duration timeout_, counted_{};
  Clock::time_point last_asked_;
};

}  // namespace ptrain
