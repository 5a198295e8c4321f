#pragma once
// A model whose every gradient is -1 in each element, so that with lr 1 each
// applied update adds exactly 1 to every parameter: the parameters count the
// updates that reached the shared vector (exact in float up to 2^24).
#include <algorithm>
#include <thread>
#include <vector>

#include "core/model.hpp"

namespace ptrain::test {

class CountingModel final : public Model {
 public:
  explicit CountingModel(size_t size) : params_(size, 0.0f), grads_(size, 0.0f) {
    layout_.add("count", {static_cast<int64_t>(size)});
  }

  std::string name() const override { return "counting"; }
  const FlatLayout& layout() const override { return layout_; }
  std::span<float> params() override { return params_; }
  std::span<float> grads() override { return grads_; }
  float forward_backward(const Batch&) override {
    std::this_thread::yield();  // let the threads interleave
    std::fill(grads_.begin(), grads_.end(), -1.0f);
    return 1.0f;
  }
  Metrics evaluate(const Dataset& data) override {
    Metrics m;
    m.samples = data.size();
    m.loss = 1.0 / (1.0 + params_[0]);
    return m;
  }

 private:
  FlatLayout layout_;
  std::vector<float> params_, grads_;
};

}  // namespace ptrain::test
