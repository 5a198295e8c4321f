#pragma once
// The Model interface every strategy drives. Parameters and gradients are two
// flat float buffers with the same layout; the layers below see only spans.
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/dataset.hpp"
#include "core/flat_layout.hpp"

namespace ptrain {

struct Metrics {
  double loss = 0;      // mean cross-entropy
  double accuracy = 0;  // fraction of samples classified correctly
  size_t samples = 0;

  // From a summed loss and a count of correct answers over `samples` samples.
  static Metrics from_sums(double loss_sum, size_t correct, size_t samples) {
    Metrics m;
    m.samples = samples;
    if (samples > 0) {
      m.loss = loss_sum / static_cast<double>(samples);
      m.accuracy = static_cast<double>(correct) / static_cast<double>(samples);
    }
    return m;
  }
};

class Model {
 public:
  virtual ~Model() = default;

  virtual std::string name() const = 0;
  virtual const FlatLayout& layout() const = 0;
  virtual std::span<float> params() = 0;
  virtual std::span<float> grads() = 0;

  // Overwrites grads() with the gradient of the mean loss over the batch and
  // returns that loss.
  virtual float forward_backward(const Batch& batch) = 0;

  // Loss and accuracy over a whole data set, without touching grads().
  virtual Metrics evaluate(const Dataset& data) = 0;

  // Called during forward_backward() as soon as the gradient of layout segment
  // `segment` is final, so its communication can start while backward goes on.
  using GradientReadyHook = std::function<void(size_t segment)>;
  // Models that can tell (LibTorch's autograd hooks) keep the hook and return
  // true; for the others every gradient is final when forward_backward() returns.
  // An empty hook removes it.
  virtual bool set_gradient_ready_hook(GradientReadyHook /*hook*/) { return false; }
};

}  // namespace ptrain
