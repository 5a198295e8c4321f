#include "optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ptrain {

double LrSchedule::factor(double epoch) const {
  switch (decay) {
    case LrDecay::Step: {
      double f = 1;
      for (const int64_t m : milestones)
        if (epoch >= static_cast<double>(m)) f *= gamma;
      return f;
    }
    case LrDecay::Cosine:
      if (!(epochs > 0) || epoch >= epochs) return 0;
      return 0.5 * (1 + std::cos(std::numbers::pi * std::max(epoch, 0.0) / epochs));
    case LrDecay::Constant:
      break;
  }
  return 1;
}

std::string describe(const LrSchedule& schedule) {
  switch (schedule.decay) {
    case LrDecay::Step:
      return fmt::format("x{:g} after epoch(s) {}", schedule.gamma, fmt::join(schedule.milestones, ","));
    case LrDecay::Cosine:
      return fmt::format("cosine to 0 over {:g} epochs", schedule.epochs);
    case LrDecay::Constant:
      break;
  }
  return {};
}

}  // namespace ptrain
