#pragma once
// The data sets a run can choose (--data-set, the plan's `data`). Adding one is
// its options struct (`name`, `fields`, `check`, `load`, and `check_test`,
// `load_test` for the test set alone, which ptrain eval reads) and one line
// below. Fields named train_* describe only the training set.
#include <optional>
#include <string>
#include <string_view>

#include "core/dataset.hpp"
#include "core/fields.hpp"
#include "core/problems.hpp"
#include "core/registry.hpp"
#include "data/bible_corpus.hpp"
#include "data/fashion_mnist.hpp"
#include "data/loaded_data.hpp"
#include "data/npy_dataset.hpp"

namespace ptrain {

struct FashionMnistOptions {
  static constexpr std::string_view name = "fashion-mnist";
  static constexpr std::string_view summary =
      "Fashion-MNIST (or MNIST) IDX files, gzipped or not (Debian: dataset-fashion-mnist)";
  std::string dir = kDefaultFashionMnistDir;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("dir", s.dir, "directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]", Range{});
  }
  // What can be known without reading the files: that they are there.
  void check(const std::string& prefix, Problems& problems) const;
  LoadedData load() const;
  void check_test(const std::string& prefix, Problems& problems) const;
  Dataset load_test() const;
};

// The model a data set trains by default, where it names one (a language
// model for a corpus); the plan's own otherwise.
template <class D>
std::optional<std::string_view> default_model_of(const D&) {
  if constexpr (requires { D::default_model; }) return D::default_model;
  else return std::nullopt;
}

using DataRegistry = Registry<FashionMnistOptions, NpyOptions, BibleOptions>;
using DataChoice = DataRegistry::Choice;

}  // namespace ptrain
