#include "core/wait_deadline.hpp"

#include <algorithm>

namespace ptrain {

WaitDeadline::WaitDeadline(std::chrono::milliseconds timeout)
    : timeout_(std::clamp<std::chrono::milliseconds>(timeout, std::chrono::milliseconds(0),
                                                     std::chrono::hours(24 * 365))),
      last_asked_(Clock::now()) {}

bool WaitDeadline::passed() {
  const auto now = Clock::now();
  const auto gap = now - last_asked_;
  last_asked_ = now;
  // A slice and a scheduler's delay count whole; a standstill counts as one
  // slice, so that a process that keeps standing still still times out.
  counted_ += gap <= kSlice + kStandstill ? gap : Clock::duration(kSlice);
  return counted_ >= timeout_;
}

WaitDeadline::Clock::duration WaitDeadline::slice() const {
  return std::clamp<Clock::duration>(timeout_ - counted_, Clock::duration::zero(), kSlice);
}

}  // namespace ptrain
