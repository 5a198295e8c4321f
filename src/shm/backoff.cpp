#include "shm/backoff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "core/error.hpp"

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

void Backoff::save_state(StateWriter& out, std::string_view prefix) const {
  const std::string p(prefix);
  out.put_value(p + "backoff.rng", rng_.state());
  out.put_value(p + "backoff.delay_us", delay_us_);
  out.put_value(p + "backoff.waits", waits_);
  out.put_value(p + "backoff.waited_us", waited_us_);
}

void Backoff::load_state(StateReader& in, std::string_view prefix) {
  const std::string p(prefix);
  rng_.set_state(in.take_value<uint64_t>(p + "backoff.rng"));
  const auto delay = in.take_value<double>(p + "backoff.delay_us");
  // A delay beyond the bounds would make a thread wait that long (a hang, for a crafted file).
  if (!(delay >= config_.min_us && delay <= config_.max_us))
    throw Error(fmt::format("{}: record '{}backoff.delay_us' holds {} us, outside this run's backoff bounds [{}, {}]",
                            in.source(), prefix, delay, config_.min_us, config_.max_us));
  delay_us_ = delay;
  waits_ = in.take_value<uint64_t>(p + "backoff.waits");
  waited_us_ = in.take_value<double>(p + "backoff.waited_us");
}

}  // namespace ptrain
