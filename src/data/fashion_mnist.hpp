#pragma once
// Fashion-MNIST (or MNIST) from a directory of IDX files:
// {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz].
#include <string>

#include "core/dataset.hpp"

namespace ptrain {

// Where Debian's dataset-fashion-mnist package puts the files.
inline const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";

enum class Split { Train, Test };

// Loads one split; pixels scaled to [0,1], sample shape {1, 28, 28}, 10 classes.
// Checks that both files exist, that images and labels agree on the count and
// that every label is in [0, 10). Errors name the file.
Dataset load_fashion_mnist(const std::string& dir, Split split);

// Throws ptrain::Error naming the first missing file; loads nothing.
void check_fashion_mnist_dir(const std::string& dir);
// The same for one split's two files.
void check_fashion_mnist_split(const std::string& dir, Split split);

// Standardises features in place with a mean and standard deviation taken from
// `reference` (the training set), so train and test share one transform.
struct Standardization {
  float mean = 0;
  float stddev = 1;
};
Standardization fit_standardization(const Dataset& reference);
void apply_standardization(Dataset& data, Standardization s);

}  // namespace ptrain
