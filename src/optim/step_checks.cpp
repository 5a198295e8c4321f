#include "optim/step_checks.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"

namespace ptrain {

void check_step_sizes(std::string_view optimizer, size_t size, size_t params_size, size_t grad_size) {
  if (params_size != size || grad_size != size) {
    throw Error(
        fmt::format("{} step: optimizer holds state for {} parameters but got {} "
                    "parameters and {} gradient values",
                    optimizer, size, params_size, grad_size));
  }
}

float checked_scheduled_lr(std::string_view optimizer, float lr) {
  if (!(std::isfinite(lr) && lr >= 0.0f)) {
    throw Error(fmt::format("{}: learning rate must be finite and >= 0 (got {})", optimizer, lr));
  }
  return lr;
}

void check_state_kind(StateReader& in, std::string_view optimizer) {
  const std::string saved = in.take_text("optimizer");
  if (saved != optimizer)
    throw Error(fmt::format("{}: the state is of the {} optimizer, this run's is {}", in.source(), saved, optimizer));
}

}  // namespace ptrain
