#pragma once
// A learning rate that changes as training goes on: one function of the
// fractional epoch (steps done / steps per epoch), so every worker, server
// shard and thread that applies an update works out the same rate for it from
// where the run is, and a resumed run goes on with the rate it had. The
// word-language-model recipe divides the rate at set epochs (step); cosine
// annealing takes it to zero by the run's end.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/fields.hpp"

namespace ptrain {

enum class LrDecay { Constant, Step, Cosine };

template <>
struct EnumText<LrDecay> {
  static constexpr std::array<std::string_view, 3> names = {"constant", "step", "cosine"};
};

struct LrSchedule {
  LrDecay decay = LrDecay::Constant;
  std::vector<int64_t> milestones{};  // step: after each of these epochs the rate is multiplied by gamma
  double gamma = 0.1;               // step
  double epochs = 0;                // cosine: the run's length, where the rate reaches 0
  bool operator==(const LrSchedule&) const = default;

  // The factor on the base rate for an update taken `epoch` epochs into the
  // run: 1 throughout for constant; gamma^(milestones passed) for step;
  // (1 + cos(pi * epoch / epochs)) / 2 for cosine (0 from `epochs` on).
  double factor(double epoch) const;
};

// For the summary: "" for constant, "x0.25 after epochs 6,8" for step,
// "cosine to 0 over 10 epochs".
std::string describe(const LrSchedule& schedule);

}  // namespace ptrain
