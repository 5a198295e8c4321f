#pragma once
// How a run places its threads on the machine's cores and NUMA nodes
// (run.placement): none (the scheduler's choice), compact (the cores in
// order, one thread each before any core takes a second) or spread
// (round-robin over the NUMA nodes, then the cores of each). A thread's
// memory goes where its core is (topology/placer.hpp).
#include <array>
#include <string_view>

#include "core/fields.hpp"

namespace ptrain {

enum class Placement { None, Compact, Spread };
template <>
struct EnumText<Placement> {
  static constexpr std::array<std::string_view, 3> names = {"none", "compact", "spread"};
};

}  // namespace ptrain
