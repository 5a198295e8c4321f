#include "shm/shared_parameters.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

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
  if (!config.make_parameters) throw Error("shared-memory SGD: no algorithm to make the shared parameters");
  return config.make_parameters(config, initial);
}

}  // namespace ptrain
