#include "data/npy_dataset.hpp"

#include <sys/stat.h>

#include <algorithm>

#include "core/error.hpp"
#include "data/npy_file.hpp"

namespace ptrain {

namespace {

void check_file(const std::string& field, const std::string& path, Problems& problems) {
  struct stat st {};
  if (path.empty())
    problems.add(field, "needs the path of a .npy file");
  else if (::stat(path.c_str(), &st) != 0)
    problems.add(field, ": " + path + ": no such file");
  else if (!S_ISREG(st.st_mode))
    problems.add(field, ": " + path + ": not a regular file");
}

}  // namespace

void NpyOptions::check(const std::string& prefix, Problems& problems) const {
  check_file(prefix + "train_features", train_features, problems);
  check_file(prefix + "train_labels", train_labels, problems);
  check_test(prefix, problems);
}

void NpyOptions::check_test(const std::string& prefix, Problems& problems) const {
  check_file(prefix + "test_features", test_features, problems);
  check_file(prefix + "test_labels", test_labels, problems);
}

Dataset NpyOptions::load_test() const {
  return load_npy_dataset(test_features, test_labels, "npy-test", classes);
}

LoadedData NpyOptions::load() const {
  LoadedData data{load_npy_dataset(train_features, train_labels, "npy-train", classes),
                  load_npy_dataset(test_features, test_labels, "npy-test", classes)};
  // Without a given count each set takes its own largest label: agree on the larger.
  if (classes == 0 && data.train.num_classes() != data.test.num_classes()) {
    const int both = std::max(data.train.num_classes(), data.test.num_classes());
    data.train = load_npy_dataset(train_features, train_labels, "npy-train", both);
    data.test = load_npy_dataset(test_features, test_labels, "npy-test", both);
  }
  if (const auto why = test_set_mismatch(data.train, data.test)) {
    const bool features = data.test.sample_shape() != data.train.sample_shape();
    throw Error(features ? "data.test_features: " + test_features + ": " + *why
                         : "data.test_labels: " + test_labels + ": " + *why);
  }
  return data;
}

}  // namespace ptrain
