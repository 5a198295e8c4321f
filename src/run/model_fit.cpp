#include "run/model_fit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/error.hpp"

namespace ptrain {

void check_model_fits(Model& model, const Dataset& train, const std::string& what) {
  const size_t count = std::min<size_t>(train.size(), 2);
  if (count == 0) return;  // an empty set is refused where it is loaded
  std::vector<size_t> indices(count);
  std::iota(indices.begin(), indices.end(), size_t{0});
  Batch batch;
  batch.gather(train, indices);
  const std::string data = fmt::format("samples of shape [{}] and {} {}", fmt::join(train.sample_shape(), ", "),
                                       train.num_classes(),
                                       train.task() == Task::LanguageModel ? "tokens" : "classes");
  std::vector<int64_t> output;
  try {
    output = model.output_shape(batch);
  } catch (const Error& e) {
    throw Error(fmt::format("model {} does not fit the data ({}): {}", what, data, e.what()));
  }
  if (output.empty()) return;  // a model built to the data's shape: nothing to check
  std::vector<int64_t> expected{static_cast<int64_t>(count)};
  expected.insert(expected.end(), train.label_shape().begin(), train.label_shape().end());
  expected.push_back(train.num_classes());
  if (output != expected)
    throw Error(fmt::format("model {} does not fit the data ({}): its output for {} samples has shape [{}], not [{}]",
                            what, data, count, fmt::join(output, ", "), fmt::join(expected, ", ")));
  try {  // its loss too (a TorchScript module may bring its own)
    model.forward_backward(batch);
  } catch (const Error& e) {
    throw Error(fmt::format("model {} does not fit the data ({}): a training step on {} samples failed: {}", what, data,
                            count, e.what()));
  }
}

}  // namespace ptrain
