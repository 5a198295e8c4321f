#pragma once
// An in-memory labelled data set: samples stored row after row as floats, and
// int64 targets: one class label per sample (classification), or one per
// position of a sequence sample (language modelling: the next token at each
// position; token ids are stored exactly as floats, below 2^24). Knows nothing
// of files (data/) or of frameworks (model/).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ptrain {

// What the targets say, and so which loss and metrics fit: one class per
// sample, or a next token per position (model/ computes cross-entropy either way).
enum class Task { Classification, LanguageModel };

class Dataset {
 public:
  Dataset() = default;
  // sample_shape is the shape of one sample, e.g. {1, 28, 28} for an image.
  // label_shape is the shape of one sample's targets: {} for one class label,
  // {T} for a sequence of T next tokens. Every target is in [0, num_classes).
  Dataset(std::string name, std::vector<int64_t> sample_shape, std::vector<float> features,
          std::vector<int64_t> labels, int num_classes, std::vector<int64_t> label_shape = {});

  const std::string& name() const { return name_; }
  size_t size() const { return labels_.size() / label_numel_; }
  size_t sample_numel() const { return sample_numel_; }
  const std::vector<int64_t>& sample_shape() const { return sample_shape_; }
  int num_classes() const { return num_classes_; }  // classes, or the vocabulary's size
  const std::vector<int64_t>& label_shape() const { return label_shape_; }
  size_t label_numel() const { return label_numel_; }  // targets per sample
  Task task() const { return label_shape_.empty() ? Task::Classification : Task::LanguageModel; }

  std::span<const float> sample(size_t i) const {
    return {features_.data() + i * sample_numel_, sample_numel_};
  }
  int64_t label(size_t i) const { return labels_[i * label_numel_]; }  // the (first) target of sample i
  std::span<const int64_t> targets(size_t i) const { return {labels_.data() + i * label_numel_, label_numel_}; }
  std::span<const float> features() const { return features_; }
  std::span<const int64_t> labels() const { return labels_; }
  std::span<float> mutable_features() { return features_; }

  // The first n samples (for quick runs and tests).
  Dataset head(size_t n) const;

  // A token stream (a corpus): its samples are consecutive pieces of one
  // sequence, in order, so a recurrent model may carry its state from one to
  // the next, and samplers keep the order (data/sharded_sampler.hpp).
  bool stream() const { return stream_; }
  // One sample holding `tokens` but the last, whose targets are the next
  // token at each position; cut it to a model's length with chunked().
  static Dataset token_stream(std::string name, const std::vector<int32_t>& tokens, int vocabulary);
  // A stream cut into consecutive samples of `length` tokens (the last
  // partial one dropped), at most `max_samples` of them. Throws
  // ptrain::Error when no sample is left.
  Dataset chunked(size_t length, size_t max_samples = SIZE_MAX) const;
  // A stream scored as a recurrent model scores it: cut into pieces of
  // `piece_length`, dealt into stream_rows() rows of whole consecutive pieces,
  // each row one sample (the pieces that do not fill a row left out).
  Dataset as_evaluation_rows(size_t piece_length) const;
  // How many tokens a stream holds (its targets).
  size_t stream_tokens() const { return labels_.size(); }

 private:
  std::string name_;
  std::vector<int64_t> sample_shape_;
  size_t sample_numel_ = 0;
  std::vector<float> features_;
  std::vector<int64_t> labels_;
  int num_classes_ = 0;
  std::vector<int64_t> label_shape_;
  size_t label_numel_ = 1;
  bool stream_ = false;
};

// How a recurrent model reads a stream of `pieces` pieces when it evaluates:
// in `rows` rows (the word language-model recipe's 10, or fewer for a short
// stream), each of `per_row` consecutive pieces with the state carried along.
struct StreamRows {
  size_t rows = 0, per_row = 0;
};
inline constexpr size_t kStreamEvaluationRows = 10;
StreamRows stream_rows(size_t pieces);

// How many samples an evaluation runs at a time: up to 1000, fewer when
// their outputs would pass 16 Mi values (a language model's: positions x
// vocabulary each).
size_t evaluation_chunk(const Dataset& data);

// A mini-batch gathered into contiguous memory, ready for a model.
struct Batch {
  std::vector<int64_t> sample_shape;
  std::vector<int64_t> label_shape;  // {} or {T}, as the data set's
  std::vector<float> features;       // size() * sample_numel floats
  std::vector<int64_t> labels;       // size() * label numel targets
  size_t count = 0;                  // samples
  size_t size() const { return count; }
  // Which samples, and whether they are pieces of a stream: a recurrent model
  // carries a row's state when its sample follows the one that row held before.
  std::vector<size_t> indices;
  bool stream = false;

  // Refills this batch with the given samples of a data set (reuses its memory).
  void gather(const Dataset& data, std::span<const size_t> indices);
  // Refills `out` with samples [begin, end) of this batch (reuses its memory).
  void slice_into(size_t begin, size_t end, Batch& out) const;
};

}  // namespace ptrain
