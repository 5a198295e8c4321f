#include "optim/step_checks.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "core/printable.hpp"

namespace ptrain {

void check_step_sizes(std::string_view optimizer, size_t size, size_t params_size, size_t grad_size) {
  if (params_size != size || grad_size != size) {
    throw Error(
        fmt::format("{} step: optimizer holds state for {} parameters but got {} "
                    "parameters and {} gradient values",
                    optimizer, size, params_size, grad_size));
  }
}

void check_slice_sizes(std::string_view optimizer, size_t size, size_t offset, size_t params_size,
                       size_t grad_size) {
  if (offset > size || params_size > size - offset || grad_size != params_size) {
    throw Error(fmt::format("{} step: optimizer holds state for {} parameters but got a slice of {} "
                            "parameters at {} and {} gradient values",
                            optimizer, size, params_size, offset, grad_size));
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
    throw Error(fmt::format("{}: the state is of the {} optimizer, this run's is {}", in.source(),
                            printable(saved, 40), optimizer));
}

int64_t take_step_count(StateReader& in) {
  constexpr int64_t kMost = int64_t{1} << 53;
  const auto steps = in.take_value<int64_t>("optimizer.steps");
  if (steps < 0 || steps >= kMost)
    throw Error(fmt::format("{}: the optimizer's state counts {} steps (a run takes from 0 to below {})",
                            in.source(), steps, kMost));
  return steps;
}

float take_lr(StateReader& in) {
  const auto lr = in.take_value<float>("optimizer.lr");
  if (!(std::isfinite(lr) && lr >= 0.0f))
    throw Error(
        fmt::format("{}: the optimizer's learning rate is {} (it must be finite and >= 0)", in.source(), lr));
  return lr;
}

}  // namespace ptrain
