#pragma once
// Gradient accumulation: each step of the model it wraps taken as M
// micro-batches of the batch, one after another, their gradients summed into
// one (each weighted by its share of the samples) before the strategy
// exchanges anything. The update is that of the whole batch, with the
// activations of one micro-batch at a time.
#include <cstddef>
#include <vector>

#include "core/model.hpp"

namespace ptrain {

class MicrobatchModel final : public Model {
 public:
  // `microbatches` >= 1; a batch smaller than it is refused at its step.
  MicrobatchModel(Model& inner, size_t microbatches);
  ~MicrobatchModel() override;

  std::string name() const override { return inner_.name(); }
  const FlatLayout& layout() const override { return inner_.layout(); }
  std::span<float> params() override { return inner_.params(); }
  std::span<float> grads() override { return inner_.grads(); }
  // Micro-batch k holds samples [k n / M, (k + 1) n / M) of the batch's n.
  float forward_backward(const Batch& batch) override;
  Metrics evaluate(const Dataset& data) override { return inner_.evaluate(data); }
  std::vector<int64_t> output_shape(const Batch& batch) override { return inner_.output_shape(batch); }
  // The hook hears of a segment during the last micro-batch's backward, once
  // the earlier micro-batches' gradients are added to it.
  bool set_gradient_ready_hook(GradientReadyHook hook) override;
  DeviceTraffic device_traffic() const override { return inner_.device_traffic(); }
  void save_state(StateWriter& out) const override { inner_.save_state(out); }
  void load_state(StateReader& in) override { inner_.load_state(in); }

 private:
  // The last micro-batch's gradient of `segment`, weighted, plus the earlier ones'.
  void fold(size_t segment);

  Model& inner_;
  size_t microbatches_;
  std::vector<float> earlier_;  // the weighted sum of the earlier micro-batches' gradients
  Batch part_;
  GradientReadyHook hook_;
  bool in_last_ = false;
  float last_share_ = 0;
  std::vector<char> folded_;  // per segment, in the last micro-batch
};

}  // namespace ptrain
