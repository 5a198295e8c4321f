#include "shm/shm_config.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"

namespace ptrain {

std::string to_string(BackoffKind kind) {
  switch (kind) {
    case BackoffKind::None: return "none";
    case BackoffKind::Exponential: return "exp";
    case BackoffKind::ExponentialJitter: return "exp-jitter";
  }
  return "?";
}

void validate_shm_config(const ShmConfig& c) {
  if (!c.make_parameters)
    throw Error("shared-memory SGD: no algorithm (a shared-memory strategy's options make the config: shm_config())");
  if (c.threads < 1) throw Error(fmt::format("run.workers must be at least 1 (got {})", c.threads));
  if (c.batch < 1) throw Error("run.batch must be at least 1");
  validate_optimizer_config(c.optimizer);
  if (!(c.epochs > 0) || !std::isfinite(c.epochs))
    throw Error(fmt::format("run.epochs must be > 0 (got {})", c.epochs));
  if (!(c.backoff.min_us > 0) || !std::isfinite(c.backoff.min_us))
    throw Error(fmt::format("strategy.backoff_min must be > 0 microseconds (got {})", c.backoff.min_us));
  if (!(c.backoff.max_us >= c.backoff.min_us) || !std::isfinite(c.backoff.max_us))
    throw Error(fmt::format("strategy.backoff_max must be at least strategy.backoff_min ({} us) (got {})", c.backoff.min_us,
                            c.backoff.max_us));
  if (!(c.target_loss >= 0) || !std::isfinite(c.target_loss))
    throw Error(fmt::format("strategy.target_loss must be >= 0 (got {})", c.target_loss));
  if (!(c.diverge_above > 0)) throw Error(fmt::format("strategy.diverge_above must be > 0 (got {})", c.diverge_above));
  if (!(c.time_limit_s >= 0) || !std::isfinite(c.time_limit_s))
    throw Error(fmt::format("run.time_limit must be >= 0 seconds (got {})", c.time_limit_s));
  if (!(c.checkpoint_every_s >= 0) || !std::isfinite(c.checkpoint_every_s))
    throw Error(fmt::format("run.checkpoint_every must be >= 0 seconds (got {})", c.checkpoint_every_s));
}

}  // namespace ptrain
