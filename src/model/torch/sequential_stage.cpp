#include "model/torch/sequential_stage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/timeline.hpp"
#include "model/torch/flat_module.hpp"
#include "model/torch/torch_error.hpp"

namespace ptrain {

namespace {

std::vector<int64_t> shape_of(const torch::Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

void copy_out(const torch::Tensor& t, Activations& out) {
  const auto c = t.contiguous();
  out.shape = shape_of(c);
  out.values.resize(static_cast<size_t>(c.numel()));
  std::memcpy(out.values.data(), c.data_ptr<float>(), out.values.size() * sizeof(float));
}

torch::Tensor view_of(const Activations& a, const char* what) {
  int64_t n = 1;
  for (const int64_t d : a.shape) n *= d;
  if (a.shape.empty() || n != static_cast<int64_t>(a.values.size()))
    throw Error(fmt::format("pipeline stage: {} of shape [{}] holds {} values", what, fmt::join(a.shape, ", "),
                            a.values.size()));
  return torch::from_blob(const_cast<float*>(a.values.data()), a.shape, torch::kFloat32);
}

}  // namespace

SequentialLayers sequential_layers(const std::vector<ModuleChild>& children, const FlatLayout& layout,
                                   const std::string& model, std::string& why_not) {
  SequentialLayers out;
  size_t segment = 0;
  for (size_t c = 0; c < children.size(); ++c) {
    const size_t held = children[c].trained_parameters;
    if (held == 0) continue;  // joins the layer before it (or the first)
    out.layers.push_back({children[c].name, segment, held});
    out.first_child.push_back(out.layers.size() == 1 ? 0 : c);
    segment += held;
  }
  out.first_child.push_back(children.size());
  if (segment != layout.segments().size()) {
    why_not = fmt::format("model {}: its layers' parameters are not its {} tensors in order (shared weights?), so "
                          "it cannot be split into stages",
                          model, layout.segments().size());
    return {};
  }
  return out;
}

SequentialStage::SequentialStage(FlatModule& model, const std::vector<ModuleChild>& children, size_t first_child,
                                 size_t end_child, size_t first_segment, size_t end_segment, bool last)
    : model_(model),
      children_(children),
      first_child_(first_child),
      end_child_(end_child),
      first_(first_child == 0),
      last_(last) {
  const auto& segments = model.layout().segments();
  grad_offset_ = segments[first_segment].offset;
  const FlatSegment& end = segments[end_segment - 1];
  grad_count_ = end.offset + end.numel - grad_offset_;
}

torch::Tensor SequentialStage::run_children(torch::Tensor x, size_t& bytes) {
  bytes = 0;
  for (size_t c = first_child_; c < end_child_; ++c) {
    x = children_[c].forward(x);
    bytes += static_cast<size_t>(x.nbytes());
  }
  return x;
}

float SequentialStage::forward(size_t slot, const Batch& micro, const Activations& in, Activations& out) {
  try {
    return forward_pass(slot, micro, in, out);
  } catch (const c10::Error& e) {
    throw Error("model " + model_.name() + ": " + torch_error_line(e));
  }
}

void SequentialStage::backward(size_t slot, const Activations& grad_out, Activations& grad_in) {
  try {
    backward_pass(slot, grad_out, grad_in);
  } catch (const c10::Error& e) {
    throw Error("model " + model_.name() + ": " + torch_error_line(e));
  }
}

float SequentialStage::forward_pass(size_t slot, const Batch& micro, const Activations& in, Activations& out) {
  TimelineSpan span("forward", "micro-batch", static_cast<int64_t>(slot));
  Held held;
  torch::Tensor x;
  // Copies: the micro-batch's memory and `in` are reused before this backward.
  if (first_) {
    const Task task = micro.label_shape.empty() ? Task::Classification : Task::LanguageModel;
    x = input_tensor(micro.features.data(), micro.size(), micro.sample_shape, task).clone();
  } else {
    x = view_of(in, "activations").clone().requires_grad_(true);
    held.input = x;
  }
  torch::Tensor y = run_children(x, held.bytes);
  float loss = 0;
  if (last_) {
    const auto labels = label_tensor(micro.labels.data(), micro.size(), micro.label_shape).clone();
    y = model_.loss_of(y, labels);
    if (y.numel() != 1)
      throw Error("model " + model_.name() + ": the loss has shape " + c10::str(y.sizes()) +
                  ", not a single value");
    loss = y.item<float>();
  } else {
    copy_out(y.detach(), out);
  }
  held.output = y;
  held_[slot] = std::move(held);
  return loss;
}

void SequentialStage::backward_pass(size_t slot, const Activations& grad_out, Activations& grad_in) {
  TimelineSpan span("backward", "micro-batch", static_cast<int64_t>(slot));
  const auto found = held_.find(slot);
  if (found == held_.end()) throw Error(fmt::format("pipeline stage: micro-batch {} has had no forward pass", slot));
  Held held = std::move(found->second);
  held_.erase(found);
  const auto grads = model_.grads().subspan(grad_offset_, grad_count_);
  std::fill(grads.begin(), grads.end(), 0.0f);
  if (last_) {
    held.output.backward();
  } else {
    const auto g = view_of(grad_out, "the gradient of the activations");
    if (!g.sizes().equals(held.output.sizes()))
      throw Error(fmt::format("pipeline stage: the gradient has shape [{}], the activations [{}]",
                              fmt::join(grad_out.shape, ", "), fmt::join(shape_of(held.output), ", ")));
    held.output.backward(g);
  }
  if (!first_) copy_out(held.input.grad(), grad_in);
}

void SequentialStage::infer(const Batch& micro, const Activations& in, Activations& out, EvaluationSums& sums) {
  try {
    torch::NoGradGuard no_grad;
    model_.set_training(false);
    struct Training {  // back to training mode however the pass ends
      const FlatModule& model;
      ~Training() { model.set_training(true); }
    } back{model_};
    const Task task = micro.label_shape.empty() ? Task::Classification : Task::LanguageModel;
    const torch::Tensor x = first_ ? input_tensor(micro.features.data(), micro.size(), micro.sample_shape, task)
                                   : view_of(in, "activations");
    size_t bytes = 0;
    const torch::Tensor y = run_children(x, bytes);
    if (last_)
      model_.score(y, label_tensor(micro.labels.data(), micro.size(), micro.label_shape), sums);
    else
      copy_out(y, out);
  } catch (const c10::Error& e) {
    throw Error("model " + model_.name() + ": " + torch_error_line(e));
  }
}

size_t SequentialStage::held_bytes() const {
  size_t bytes = 0;
  for (const auto& [slot, held] : held_) bytes += held.bytes;
  return bytes;
}

}  // namespace ptrain
