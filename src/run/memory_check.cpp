#include "run/memory_check.hpp"

#include <fmt/format.h>

#include "core/memory_size.hpp"

namespace ptrain {

void check_memory(const RunPlan& plan, const ModelInput& input, int workers_here, bool plan_model,
                  Problems& problems) {
  constexpr double kFloat = sizeof(float);
  const double workers = static_cast<double>(std::max(workers_here, 1));
  if (const auto size = plan_model ? size_before_making(plan.model, input) : std::nullopt) {
    const double replica = 2 * kFloat * size->parameters;  // weights and gradients
    // The output layer grows with the classes: when one class would fit, their count is what is too large.
    ModelInput one_class = input;
    one_class.classes = 1;
    const auto size_of_one = size_before_making(plan.model, one_class);
    const bool classes_too_many = size_of_one && !beyond_memory(2 * kFloat * size_of_one->parameters);
    if (const auto why = beyond_memory(replica))
      problems.add(classes_too_many ? "data.classes" : "model." + size->field,
                   fmt::format(": the {} model of {:.3g} parameters for {} classes (its weights and gradients) needs {}",
                               ModelRegistry::name_of(plan.model), size->parameters, input.classes, *why));
    else if (const auto why_all = beyond_memory(workers * replica))
      problems.add("run.workers", fmt::format("{}: a replica each of the {:.3g}-parameter model (weights and "
                                              "gradients) need {}",
                                              workers_here, size->parameters, *why_all));
  }
  double sample = 1;
  for (int64_t d : input.sample_shape) sample *= static_cast<double>(d);
  const double batches = workers * static_cast<double>(plan.run.batch) * sample * kFloat;
  if (const auto why = beyond_memory(batches))
    problems.add("run.batch", fmt::format("{}: {} of {} samples of {:.0f} values need {}",
                                          plan.run.batch, workers_here > 1 ? fmt::format("{} batches", workers_here)
                                                                           : std::string("a batch"),
                                          plan.run.batch, sample, *why));
}

}  // namespace ptrain
