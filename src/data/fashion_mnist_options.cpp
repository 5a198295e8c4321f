#include "core/error.hpp"
#include "data/data_registry.hpp"

namespace ptrain {

void FashionMnistOptions::check(const std::string& prefix, Problems& problems) const {
  try {
    check_fashion_mnist_dir(dir);
  } catch (const Error& e) {
    problems.add(prefix + "dir", std::string(": ") + e.what());
  }
}

void FashionMnistOptions::check_test(const std::string& prefix, Problems& problems) const {
  try {
    check_fashion_mnist_split(dir, Split::Test);
  } catch (const Error& e) {
    problems.add(prefix + "dir", std::string(": ") + e.what());
  }
}

Dataset FashionMnistOptions::load_test() const { return load_fashion_mnist(dir, Split::Test); }

LoadedData FashionMnistOptions::load() const {
  LoadedData data{load_fashion_mnist(dir, Split::Train), load_fashion_mnist(dir, Split::Test)};
  if (const auto why = test_set_mismatch(data.train, data.test)) throw Error("data.dir: " + dir + ": " + *why);
  return data;
}

}  // namespace ptrain
