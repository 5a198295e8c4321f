#include "data/npy_dataset.hpp"

#include <sys/stat.h>

#include <algorithm>

#include "core/error.hpp"
#include "data/npy_file.hpp"

namespace ptrain {

void NpyOptions::check(const std::string& prefix, Problems& problems) const {
  const std::pair<const char*, const std::string*> files[] = {{"train_features", &train_features},
                                                              {"train_labels", &train_labels},
                                                              {"test_features", &test_features},
                                                              {"test_labels", &test_labels}};
  for (const auto& [field, path] : files) {
    struct stat st{};
    if (path->empty()) problems.add(prefix + field, "needs the path of a .npy file");
    else if (::stat(path->c_str(), &st) != 0) problems.add(prefix + field, ": " + *path + ": no such file");
    else if (!S_ISREG(st.st_mode)) problems.add(prefix + field, ": " + *path + ": not a regular file");
  }
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
  return data;
}

}  // namespace ptrain
