#pragma once
// A small multi-layer perceptron in plain C++ (tanh between affine layers,
// softmax cross-entropy) that splits into pipeline stages
// (core/model_stage.hpp), so that pipelines run in the LibTorch-free test
// builds, under the sanitizers too. Its whole forward_backward is one stage
// of every layer, so a split run and a whole one take the same arithmetic.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"
#include "core/rng.hpp"
#include "model/model_input.hpp"

namespace ptrain::test {

class LayeredTestModel : public Model {
 public:
  // widths: the input's, each hidden layer's, the classes'.
  LayeredTestModel(std::vector<size_t> widths, uint64_t seed) : widths_(std::move(widths)) {
    for (size_t l = 0; l + 1 < widths_.size(); ++l) {
      whole_.add("w" + std::to_string(l), {static_cast<int64_t>(widths_[l + 1]), static_cast<int64_t>(widths_[l])});
      whole_.add("b" + std::to_string(l), {static_cast<int64_t>(widths_[l + 1])});
    }
    layout_ = whole_;
    kept_end_ = layer_count();
    params_.resize(layout_.total());
    grads_.resize(layout_.total());
    Rng rng(seed);
    for (size_t l = 0; l + 1 < widths_.size(); ++l) {
      const FlatSegment& w = layout_.segments()[2 * l];
      const float scale = 1.0f / std::sqrt(static_cast<float>(widths_[l]));
      for (size_t i = 0; i < w.numel; ++i) params_[w.offset + i] = scale * (2 * rng.uniform() - 1);
    }
  }

  std::string name() const override { return "layered"; }
  const FlatLayout& layout() const override { return layout_; }
  std::span<float> params() override { return params_; }
  std::span<float> grads() override { return grads_; }
  size_t layer_count() const { return widths_.size() - 1; }

  float forward_backward(const Batch& batch) override {
    check_whole();
    auto whole = stage(0, layer_count());
    Activations none, unused;
    const float loss = whole->forward(0, batch, none, unused);
    whole->backward(0, none, unused);
    return loss;
  }

  Metrics evaluate(const Dataset& data) override {
    check_whole();
    double loss = 0;
    size_t correct = 0;
    std::vector<float> x, y;
    for (size_t i = 0; i < data.size(); ++i) {
      const auto s = data.sample(i);
      x.assign(s.begin(), s.end());
      for (size_t l = 0; l < layer_count(); ++l) {
        affine(l, x, y, 1);
        if (l + 1 < layer_count())
          for (float& v : y) v = std::tanh(v);
        x.swap(y);
      }
      const auto label = static_cast<size_t>(data.targets(i)[0]);
      const float top = *std::max_element(x.begin(), x.end());
      double sum = 0;
      for (const float v : x) sum += std::exp(static_cast<double>(v - top));
      loss += std::log(sum) - static_cast<double>(x[label] - top);
      if (static_cast<size_t>(std::max_element(x.begin(), x.end()) - x.begin()) == label) ++correct;
    }
    return Metrics::from_sums(loss, correct, data.size());
  }

  std::vector<ModelLayer> layers(std::string&) const override {
    std::vector<ModelLayer> out;
    for (size_t l = 0; l < layer_count(); ++l) out.push_back({"affine " + std::to_string(l), 2 * l, 2});
    return out;
  }
  std::unique_ptr<ModelStage> stage(size_t first, size_t end) override {
    if (first < kept_first_ || end > kept_end_ || first >= end) throw Error("layered: no such stage");
    return std::make_unique<Stage>(*this, first, end);
  }
  // Keeps the parameters of layers [first, end) alone, as a pipeline stage's replica does.
  bool keep_layers(size_t first, size_t end) override {
    if (kept_end_ != layer_count() || kept_first_ != 0 || first >= end || end > layer_count()) return false;
    const auto& segments = whole_.segments();
    const size_t from = segments[2 * first].offset;
    const size_t to = segments[2 * end - 1].offset + segments[2 * end - 1].numel;
    layout_ = FlatLayout();
    for (size_t s = 2 * first; s < 2 * end; ++s) layout_.add(segments[s].name, segments[s].shape);
    params_ = std::vector<float>(params_.begin() + static_cast<std::ptrdiff_t>(from),
                                 params_.begin() + static_cast<std::ptrdiff_t>(to));
    grads_.assign(to - from, 0.0f);
    base_ = from, kept_first_ = first, kept_end_ = end;
    return true;
  }

 private:
  void check_whole() const {
    if (kept_first_ != 0 || kept_end_ != layer_count()) throw Error("layered: this replica keeps a stage only");
  }
  // Where segment `s` of the whole layout starts in params_ and grads_.
  size_t at(size_t s) const { return whole_.segments()[s].offset - base_; }

  // out[r, :] = W_l in[r, :] + b_l for `rows` rows.
  void affine(size_t l, const std::vector<float>& in, std::vector<float>& out, size_t rows) const {
    const size_t n_in = widths_[l], n_out = widths_[l + 1];
    const float* w = params_.data() + at(2 * l);
    const float* b = params_.data() + at(2 * l + 1);
    out.assign(rows * n_out, 0);
    for (size_t r = 0; r < rows; ++r)
      for (size_t o = 0; o < n_out; ++o) {
        float z = b[o];
        for (size_t i = 0; i < n_in; ++i) z += w[o * n_in + i] * in[r * n_in + i];
        out[r * n_out + o] = z;
      }
  }

  class Stage : public ModelStage {
   public:
    Stage(LayeredTestModel& model, size_t first, size_t end) : m_(model), first_(first), end_(end) {}

    float forward(size_t slot, const Batch& micro, const Activations& in, Activations& out) override {
      Held& h = held_[slot];
      h.rows = micro.size();
      std::vector<float> x = first_ == 0 ? micro.features : in.values;
      for (size_t l = first_; l < end_; ++l) {
        h.inputs.push_back(x);
        std::vector<float> y;
        m_.affine(l, x, y, h.rows);
        if (l + 1 < m_.layer_count())
          for (float& v : y) v = std::tanh(v);
        x.swap(y);
      }
      h.output = x;
      if (end_ < m_.layer_count()) {
        out.shape = {static_cast<int64_t>(h.rows), static_cast<int64_t>(m_.widths_[end_])};
        out.values = x;
        return 0;
      }
      h.labels = micro.labels;
      return softmax_loss(h);
    }

    void backward(size_t slot, const Activations& grad_out, Activations& grad_in) override {
      const auto found = held_.find(slot);
      if (found == held_.end()) throw Error("layered stage: no forward pass of micro-batch " + std::to_string(slot));
      Held h = std::move(found->second);
      held_.erase(found);
      const size_t last = end_ - 1;
      const size_t n_out = m_.widths_[end_];
      // The gradient of the stage's last affine output.
      std::vector<float> dz(h.rows * n_out);
      if (end_ == m_.layer_count()) {
        dz = h.probabilities;
      } else {
        for (size_t i = 0; i < dz.size(); ++i) dz[i] = grad_out.values[i] * (1 - h.output[i] * h.output[i]);
      }
      const auto& segments = m_.whole_.segments();
      std::fill(m_.grads_.begin() + static_cast<std::ptrdiff_t>(m_.at(2 * first_)),
                m_.grads_.begin() + static_cast<std::ptrdiff_t>(m_.at(2 * last + 1) + segments[2 * last + 1].numel),
                0.0f);
      for (size_t l = last + 1; l-- > first_;) {
        const size_t n_in = m_.widths_[l], n = m_.widths_[l + 1];
        const std::vector<float>& x = h.inputs[l - first_];
        float* gw = m_.grads_.data() + m_.at(2 * l);
        float* gb = m_.grads_.data() + m_.at(2 * l + 1);
        const float* w = m_.params_.data() + m_.at(2 * l);
        std::vector<float> dx(h.rows * n_in, 0);
        for (size_t r = 0; r < h.rows; ++r)
          for (size_t o = 0; o < n; ++o) {
            const float g = dz[r * n + o];
            gb[o] += g;
            for (size_t i = 0; i < n_in; ++i) {
              gw[o * n_in + i] += g * x[r * n_in + i];
              dx[r * n_in + i] += g * w[o * n_in + i];
            }
          }
        if (l == first_) {
          if (first_ > 0) grad_in = {{static_cast<int64_t>(h.rows), static_cast<int64_t>(n_in)}, dx};
          break;
        }
        dz.resize(dx.size());
        for (size_t i = 0; i < dx.size(); ++i) dz[i] = dx[i] * (1 - x[i] * x[i]);  // x = tanh of the layer below
      }
    }

    void infer(const Batch& micro, const Activations& in, Activations& out, EvaluationSums& sums) override {
      std::vector<float> x = first_ == 0 ? micro.features : in.values;
      const size_t rows = first_ == 0 ? micro.size() : static_cast<size_t>(in.shape.at(0));
      for (size_t l = first_; l < end_; ++l) {
        std::vector<float> y;
        m_.affine(l, x, y, rows);
        if (l + 1 < m_.layer_count())
          for (float& v : y) v = std::tanh(v);
        x.swap(y);
      }
      if (end_ < m_.layer_count()) {
        out.shape = {static_cast<int64_t>(rows), static_cast<int64_t>(m_.widths_[end_])};
        out.values = std::move(x);
        return;
      }
      const size_t k = m_.widths_.back();
      for (size_t r = 0; r < rows; ++r) {  // as evaluate() scores a sample
        const float* z = x.data() + r * k;
        const float top = *std::max_element(z, z + k);
        double sum = 0;
        for (size_t c = 0; c < k; ++c) sum += std::exp(static_cast<double>(z[c] - top));
        const auto label = static_cast<size_t>(micro.labels[r]);
        sums.loss += std::log(sum) - static_cast<double>(z[label] - top);
        if (static_cast<size_t>(std::max_element(z, z + k) - z) == label) ++sums.correct;
      }
    }

    size_t held_bytes() const override {
      size_t bytes = 0;
      for (const auto& [slot, h] : held_) {
        for (const auto& x : h.inputs) bytes += x.size() * sizeof(float);
        bytes += h.output.size() * sizeof(float);
      }
      return bytes;
    }
    void clear() override { held_.clear(); }

   private:
    struct Held {
      size_t rows = 0;
      std::vector<std::vector<float>> inputs;  // each layer's
      std::vector<float> output, probabilities;
      std::vector<int64_t> labels;
    };
    // Mean cross-entropy over the rows; keeps d loss / d logits.
    float softmax_loss(Held& h) const {
      const size_t k = m_.widths_.back();
      h.probabilities.assign(h.output.size(), 0);
      double loss = 0;
      for (size_t r = 0; r < h.rows; ++r) {
        const float* z = h.output.data() + r * k;
        const float top = *std::max_element(z, z + k);
        float sum = 0;
        for (size_t c = 0; c < k; ++c) sum += std::exp(z[c] - top);
        const auto label = static_cast<size_t>(h.labels[r]);
        loss += std::log(sum) - (z[label] - top);
        for (size_t c = 0; c < k; ++c)
          h.probabilities[r * k + c] =
              (std::exp(z[c] - top) / sum - (c == label ? 1.0f : 0.0f)) / static_cast<float>(h.rows);
      }
      return static_cast<float>(loss / static_cast<double>(h.rows));
    }

    LayeredTestModel& m_;
    size_t first_, end_;
    std::map<size_t, Held> held_;
  };

  std::vector<size_t> widths_;
  FlatLayout whole_, layout_;  // the whole model's; the kept layers'
  std::vector<float> params_, grads_;
  size_t base_ = 0;  // the kept layers' offset in the whole layout
  size_t kept_first_ = 0, kept_end_ = 0;  // set to every layer by the constructor
};

// RunInputs::model for a data set's shape: hidden widths between its samples and classes.
inline std::function<std::unique_ptr<Model>(const ModelInput&)> layered_model(std::vector<size_t> hidden) {
  return [hidden](const ModelInput& in) -> std::unique_ptr<Model> {
    size_t features = 1;
    for (const int64_t d : in.sample_shape) features *= static_cast<size_t>(d);
    std::vector<size_t> widths{features};
    widths.insert(widths.end(), hidden.begin(), hidden.end());
    widths.push_back(static_cast<size_t>(in.classes));
    return std::make_unique<LayeredTestModel>(widths, in.seed);
  };
}

}  // namespace ptrain::test
