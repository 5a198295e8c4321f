#pragma once
// A module that runs its children in order (a Sequential, built in C++ or
// scripted in Python) split at its layers for a pipeline
// (core/model_stage.hpp). A layer is a child that holds parameters, with the
// parameter-free children after it (ReLU, pooling, Flatten) and, for the
// first, those before it: the activations that cross a boundary are what the
// layer hands the next. A stage runs its children one after another, as the
// Sequential's own forward does, so the split model computes the bits of the
// whole one.
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/flat_layout.hpp"
#include "core/model_stage.hpp"

namespace ptrain {

class FlatModule;
struct ModuleChild;

// The children grouped into layers, each with its run of the
// layout's segments; empty, with `why_not` said, when the parameters the
// children hold are not the layout's segments in order (shared weights).
struct SequentialLayers {
  std::vector<ModelLayer> layers;
  std::vector<size_t> first_child;  // per layer, and one past the last child at the end
};
SequentialLayers sequential_layers(const std::vector<ModuleChild>& children, const FlatLayout& layout,
                                   const std::string& model, std::string& why_not);

class SequentialStage final : public ModelStage {
 public:
  // Children [first_child, end_child) of `model`'s, holding its layout
  // segments [first_segment, end_segment); `last`: the stage ends the model
  // and scores its output with the model's loss.
  SequentialStage(FlatModule& model, const std::vector<ModuleChild>& children, size_t first_child, size_t end_child,
                  size_t first_segment, size_t end_segment, bool last);
  float forward(size_t slot, const Batch& micro, const Activations& in, Activations& out) override;
  void backward(size_t slot, const Activations& grad_out, Activations& grad_in) override;
  void infer(const Batch& micro, const Activations& in, Activations& out, EvaluationSums& sums) override;
  size_t held_bytes() const override;
  void clear() override { held_.clear(); }

 private:
  // What a micro-batch's backward needs: its input (a leaf whose gradient is
  // the stage's grad_in), its output or loss, and the activations' size.
  struct Held {
    torch::Tensor input, output;
    size_t bytes = 0;
  };
  float forward_pass(size_t slot, const Batch& micro, const Activations& in, Activations& out);
  void backward_pass(size_t slot, const Activations& grad_out, Activations& grad_in);
  torch::Tensor run_children(torch::Tensor x, size_t& bytes);

  FlatModule& model_;
  const std::vector<ModuleChild>& children_;  // the model's
  size_t first_child_, end_child_;
  size_t grad_offset_ = 0, grad_count_ = 0;  // the stage's span of grads()
  bool first_, last_;
  std::map<size_t, Held> held_;
};

}  // namespace ptrain
