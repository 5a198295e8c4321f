#include "shm/backoff.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace ptrain {

Backoff::Backoff(const BackoffConfig& config, uint64_t seed)
    : config_(config), rng_(seed), delay_us_(config.min_us) {}

double Backoff::next_wait_us() {
  const double delay = delay_us_;
  delay_us_ = std::min(config_.max_us, delay_us_ * 2);
  if (config_.kind == BackoffKind::ExponentialJitter) return delay * rng_.uniform();
  return delay;
}

void Backoff::wait() {
  if (config_.kind == BackoffKind::None) return;
  const double us = next_wait_us();
  ++waits_;
  waited_us_ += us;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(us * 1000));
  while (std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

}  // namespace ptrain
