#include "model/microbatch_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace ptrain {

MicrobatchModel::MicrobatchModel(Model& inner, size_t microbatches)
    : inner_(inner),
      microbatches_(microbatches),
      earlier_(inner.grads().size()),
      folded_(inner.layout().segments().size()) {
  if (microbatches_ < 1) throw Error("microbatches must be at least 1");
}

MicrobatchModel::~MicrobatchModel() {
  if (hook_) inner_.set_gradient_ready_hook({});
}

bool MicrobatchModel::set_gradient_ready_hook(GradientReadyHook hook) {
  hook_ = std::move(hook);
  if (!hook_) return inner_.set_gradient_ready_hook({});
  return inner_.set_gradient_ready_hook([this](size_t segment) {
    if (!in_last_) return;  // the earlier micro-batches are added after their backward
    fold(segment);
    hook_(segment);
  });
}

void MicrobatchModel::fold(size_t segment) {
  if (folded_[segment]) return;
  folded_[segment] = 1;
  const FlatSegment& s = inner_.layout().segments()[segment];
  float* g = inner_.grads().data() + s.offset;
  const float* e = earlier_.data() + s.offset;
  for (size_t i = 0; i < s.numel; ++i) g[i] = last_share_ * g[i] + e[i];
}

float MicrobatchModel::forward_backward(const Batch& batch) {
  const size_t n = batch.size(), m = microbatches_;
  if (n < m) throw Error(fmt::format("a batch of {} sample(s) cannot be split into {} micro-batches", n, m));
  std::fill(earlier_.begin(), earlier_.end(), 0.0f);
  double loss = 0;
  for (size_t k = 0; k < m; ++k) {
    const size_t begin = k * n / m, end = (k + 1) * n / m;
    batch.slice_into(begin, end, part_);
    const float share = static_cast<float>(end - begin) / static_cast<float>(n);
    in_last_ = k + 1 == m;
    last_share_ = share;
    std::fill(folded_.begin(), folded_.end(), 0);
    const float part_loss = inner_.forward_backward(part_);
    loss += static_cast<double>(share) * part_loss;
    if (in_last_) break;
    const auto g = inner_.grads();
    for (size_t i = 0; i < g.size(); ++i) earlier_[i] += share * g[i];
  }
  // What the hook did not hear of (a model without hooks: every segment).
  for (size_t s = 0; s < folded_.size(); ++s) fold(s);
  in_last_ = false;
  return static_cast<float>(loss);
}

}  // namespace ptrain
