#include "shm/shared_parameters.hpp"

#include "shm/hogwild_parameters.hpp"
#include "shm/leashed_parameters.hpp"
#include "shm/locked_parameters.hpp"

namespace ptrain {

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
