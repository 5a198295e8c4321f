#pragma once
// A data set a Python user writes without ptrain: NumPy arrays saved with
// np.save, features and labels for training and for testing (data/npy_file.hpp
// reads and checks them).
#include <string>
#include <string_view>

#include "core/fields.hpp"
#include "core/problems.hpp"
#include "data/loaded_data.hpp"

namespace ptrain {

struct NpyOptions {
  static constexpr std::string_view name = "npy";
  static constexpr std::string_view summary =
      "NumPy .npy arrays (np.save): features (N, ...) and labels (N,) or, for language modelling, (N, T)";
  std::string train_features, train_labels, test_features, test_labels;
  int classes = 0;  // 0: the largest label + 1
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("train_features", s.train_features, "training features, shape (N, ...)", Range{});
    visit("train_labels", s.train_labels, "training labels, shape (N,) or (N, T)", Range{});
    visit("test_features", s.test_features, "test features", Range{});
    visit("test_labels", s.test_labels, "test labels", Range{});
    visit("classes", s.classes, "classes (or vocabulary size); 0: the largest label + 1", Range::non_negative());
  }
  void check(const std::string& prefix, Problems& problems) const;
  LoadedData load() const;
  // The test set alone: test_features and test_labels.
  void check_test(const std::string& prefix, Problems& problems) const;
  Dataset load_test() const;
};

}  // namespace ptrain
