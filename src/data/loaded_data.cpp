#include "data/loaded_data.hpp"

namespace ptrain {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace

std::optional<std::string> test_set_mismatch(const Dataset& train, const Dataset& test) {
  if (test.sample_shape() != train.sample_shape())
    return "the test set's samples have shape " + shape_text(test.sample_shape()) + ", the training set's " +
           shape_text(train.sample_shape());
  if (test.label_shape() != train.label_shape())
    return "the test set's targets have shape " + shape_text(test.label_shape()) + " per sample, the training set's " +
           shape_text(train.label_shape());
  if (test.num_classes() != train.num_classes())
    return "the test set has " + std::to_string(test.num_classes()) + " classes, the training set " +
           std::to_string(train.num_classes());
  return std::nullopt;
}

}  // namespace ptrain
