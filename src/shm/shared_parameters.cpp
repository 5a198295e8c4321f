#include "shm/shared_parameters.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

#include "shm/hogwild_parameters.hpp"
#include "shm/leashed_parameters.hpp"
#include "shm/locked_parameters.hpp"

namespace ptrain {

uint64_t take_update_count(StateReader& in, std::string_view name) {
  constexpr uint64_t kMost = uint64_t{1} << 53;
  const auto count = in.take_value<uint64_t>(name);
  if (count >= kMost)
    throw Error(fmt::format("{}: record '{}' counts {} updates (a run counts from 0 to below {})", in.source(), name,
                            count, kMost));
  return count;
}

std::unique_ptr<SharedParameters> make_shared_parameters(const ShmConfig& config, std::span<float> initial) {
  switch (config.algorithm) {
    case ShmAlgorithm::Seq: return std::make_unique<SequentialParameters>(initial, config.optimizer);
    case ShmAlgorithm::Mutex: return std::make_unique<LockedParameters>(initial, false, config.optimizer);
    case ShmAlgorithm::RwLock: return std::make_unique<LockedParameters>(initial, true, config.optimizer);
    case ShmAlgorithm::Hogwild: return std::make_unique<HogwildParameters>(initial, config.threads, config.optimizer);
    case ShmAlgorithm::Leashed:
      return std::make_unique<LeashedParameters>(initial, config.threads, config.persistence, config.optimizer);
  }
  return nullptr;
}

}  // namespace ptrain
