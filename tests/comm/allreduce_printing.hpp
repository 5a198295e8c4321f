#pragma once
// Algorithms printed by name in the tests parameterised over them: short test names in CTest.
#include <ostream>

#include "comm/allreduce_algorithms.hpp"

namespace ptrain {

inline void PrintTo(AllreduceAlgorithm a, std::ostream* out) { *out << to_string(a); }

}  // namespace ptrain
