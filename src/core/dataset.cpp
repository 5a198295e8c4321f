#include "core/dataset.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace ptrain {

Dataset::Dataset(std::string name, std::vector<int64_t> sample_shape, std::vector<float> features,
                 std::vector<int64_t> labels, int num_classes, std::vector<int64_t> label_shape)
    : name_(std::move(name)),
      sample_shape_(std::move(sample_shape)),
      features_(std::move(features)),
      labels_(std::move(labels)),
      num_classes_(num_classes),
      label_shape_(std::move(label_shape)) {
  sample_numel_ = 1;
  for (int64_t d : sample_shape_) {
    if (d <= 0) throw Error("data set '" + name_ + "': sample shape has a non-positive dimension");
    sample_numel_ *= static_cast<size_t>(d);
  }
  label_numel_ = 1;
  for (int64_t d : label_shape_) {
    if (d <= 0) throw Error("data set '" + name_ + "': target shape has a non-positive dimension");
    label_numel_ *= static_cast<size_t>(d);
  }
  if (labels_.size() % label_numel_ != 0)
    throw Error("data set '" + name_ + "': " + std::to_string(labels_.size()) + " targets do not fit samples of " +
                std::to_string(label_numel_) + " targets each");
  if (features_.size() != size() * sample_numel_)
    throw Error("data set '" + name_ + "': " + std::to_string(features_.size()) +
                " feature values do not fit " + std::to_string(size()) + " samples of " +
                std::to_string(sample_numel_));
  if (num_classes_ <= 0) throw Error("data set '" + name_ + "': needs at least one class");
  for (size_t i = 0; i < labels_.size(); ++i)
    if (labels_[i] < 0 || labels_[i] >= num_classes_)
      throw Error("data set '" + name_ + "': label " + std::to_string(labels_[i]) + " of sample " +
                  std::to_string(i / label_numel_) + " is outside [0, " + std::to_string(num_classes_) + ")");
}

Dataset Dataset::head(size_t n) const {
  n = std::min(n, size());
  std::vector<float> f(features_.begin(), features_.begin() + static_cast<std::ptrdiff_t>(n * sample_numel_));
  std::vector<int64_t> l(labels_.begin(), labels_.begin() + static_cast<std::ptrdiff_t>(n * label_numel_));
  Dataset out(name_, sample_shape_, std::move(f), std::move(l), num_classes_, label_shape_);
  out.stream_ = stream_;
  return out;
}

Dataset Dataset::token_stream(std::string name, const std::vector<int32_t>& tokens, int vocabulary) {
  if (tokens.size() < 2)
    throw Error("data set '" + name + "': a token stream needs at least 2 tokens, has " +
                std::to_string(tokens.size()));
  const size_t n = tokens.size() - 1;
  std::vector<float> inputs(tokens.begin(), tokens.end() - 1);
  std::vector<int64_t> targets(tokens.begin() + 1, tokens.end());
  Dataset out(std::move(name), {static_cast<int64_t>(n)}, std::move(inputs), std::move(targets), vocabulary,
              {static_cast<int64_t>(n)});
  out.stream_ = true;
  return out;
}

Dataset Dataset::chunked(size_t length, size_t max_samples) const {
  if (!stream_) throw Error("data set '" + name_ + "' is not a token stream: it cannot be cut into chunks");
  if (length == 0) throw Error("data set '" + name_ + "': a chunk needs at least one token");
  // Samples are in stream order, so the stream is their tokens one after another.
  const size_t tokens = labels_.size(), chunks = std::min(tokens / length, max_samples);
  if (chunks == 0)
    throw Error("data set '" + name_ + "': its " + std::to_string(tokens) + " tokens hold no chunk of " +
                std::to_string(length));
  std::vector<float> f(features_.begin(), features_.begin() + static_cast<std::ptrdiff_t>(chunks * length));
  std::vector<int64_t> l(labels_.begin(), labels_.begin() + static_cast<std::ptrdiff_t>(chunks * length));
  const auto t = static_cast<int64_t>(length);
  Dataset out(name_, {t}, std::move(f), std::move(l), num_classes_, {t});
  out.stream_ = true;
  return out;
}

StreamRows stream_rows(size_t pieces) {
  const size_t rows = std::min(kStreamEvaluationRows, pieces);
  return {rows, rows == 0 ? 0 : pieces / rows};
}

Dataset Dataset::as_evaluation_rows(size_t piece_length) const {
  if (piece_length == 0) throw Error("data set '" + name_ + "': a chunk needs at least one token");
  const StreamRows r = stream_rows(stream_tokens() / piece_length);
  if (r.rows == 0) return chunked(piece_length);  // says there is no piece
  return chunked(r.per_row * piece_length, r.rows);
}

size_t evaluation_chunk(const Dataset& data) {
  const size_t per_sample =
      std::max<size_t>(1, data.label_numel() * static_cast<size_t>(std::max(1, data.num_classes())));
  return std::clamp<size_t>((size_t{16} << 20) / per_sample, 1, 1000);
}

void Batch::gather(const Dataset& data, std::span<const size_t> indices) {
  sample_shape = data.sample_shape();
  label_shape = data.label_shape();
  count = indices.size();
  this->indices.assign(indices.begin(), indices.end());
  stream = data.stream();
  const size_t d = data.sample_numel(), t = data.label_numel();
  features.resize(indices.size() * d);
  labels.resize(indices.size() * t);
  for (size_t k = 0; k < indices.size(); ++k) {
    auto s = data.sample(indices[k]);
    std::copy(s.begin(), s.end(), features.begin() + static_cast<std::ptrdiff_t>(k * d));
    auto y = data.targets(indices[k]);
    std::copy(y.begin(), y.end(), labels.begin() + static_cast<std::ptrdiff_t>(k * t));
  }
}

void Batch::slice_into(size_t begin, size_t end, Batch& out) const {
  if (begin > end || end > count)
    throw Error(fmt::format("batch: samples [{}, {}) of a batch of {}", begin, end, count));
  const size_t d = count > 0 ? features.size() / count : 0, t = count > 0 ? labels.size() / count : 0;
  out.sample_shape = sample_shape;
  out.label_shape = label_shape;
  out.count = end - begin;
  out.stream = stream;
  if (indices.size() == count)  // a batch built by hand may not say which samples it holds
    out.indices.assign(indices.begin() + static_cast<std::ptrdiff_t>(begin),
                       indices.begin() + static_cast<std::ptrdiff_t>(end));
  else
    out.indices.clear();
  out.features.assign(features.begin() + static_cast<std::ptrdiff_t>(begin * d),
                      features.begin() + static_cast<std::ptrdiff_t>(end * d));
  out.labels.assign(labels.begin() + static_cast<std::ptrdiff_t>(begin * t),
                    labels.begin() + static_cast<std::ptrdiff_t>(end * t));
}

}  // namespace ptrain
