#pragma once
// An in-memory labelled data set: samples stored row after row as floats, one
// int64 label each. Knows nothing of files (data/) or of frameworks (model/).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ptrain {

class Dataset {
 public:
  Dataset() = default;
  // sample_shape is the shape of one sample, e.g. {1, 28, 28} for an image.
  Dataset(std::string name, std::vector<int64_t> sample_shape, std::vector<float> features,
          std::vector<int64_t> labels, int num_classes);

  const std::string& name() const { return name_; }
  size_t size() const { return labels_.size(); }
  size_t sample_numel() const { return sample_numel_; }
  const std::vector<int64_t>& sample_shape() const { return sample_shape_; }
  int num_classes() const { return num_classes_; }

  std::span<const float> sample(size_t i) const {
    return {features_.data() + i * sample_numel_, sample_numel_};
  }
  int64_t label(size_t i) const { return labels_[i]; }
  std::span<const float> features() const { return features_; }
  std::span<const int64_t> labels() const { return labels_; }
  std::span<float> mutable_features() { return features_; }

  // The first n samples (for quick runs and tests).
  Dataset head(size_t n) const;

 private:
  std::string name_;
  std::vector<int64_t> sample_shape_;
  size_t sample_numel_ = 0;
  std::vector<float> features_;
  std::vector<int64_t> labels_;
  int num_classes_ = 0;
};

// A mini-batch gathered into contiguous memory, ready for a model.
struct Batch {
  std::vector<int64_t> sample_shape;
  std::vector<float> features;  // size() * sample_numel floats
  std::vector<int64_t> labels;
  size_t size() const { return labels.size(); }

  // Refills this batch with the given samples of a data set (reuses its memory).
  void gather(const Dataset& data, std::span<const size_t> indices);
};

}  // namespace ptrain
