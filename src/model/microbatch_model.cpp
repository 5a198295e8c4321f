#include "model/microbatch_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/microbatch_sum.hpp"

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
  fold_last_microbatch(inner_.grads().subspan(s.offset, s.numel), last_share_,
                       std::span<const float>(earlier_).subspan(s.offset, s.numel));
}

float MicrobatchModel::forward_backward(const Batch& batch) {
  const size_t n = batch.size(), m = microbatches_;
  if (n < m) throw Error(fmt::format("a batch of {} sample(s) cannot be split into {} micro-batches", n, m));
  std::fill(earlier_.begin(), earlier_.end(), 0.0f);
  double loss = 0;
  for (size_t k = 0; k < m; ++k) {
    const MicrobatchRows rows = microbatch_rows(n, m, k);
    batch.slice_into(rows.begin, rows.end, part_);
    const float share = rows.share(n);
    in_last_ = k + 1 == m;
    last_share_ = share;
    std::fill(folded_.begin(), folded_.end(), 0);
    const float part_loss = inner_.forward_backward(part_);
    loss += static_cast<double>(share) * part_loss;
    if (in_last_) break;
    add_microbatch(earlier_, share, inner_.grads());
  }
  // What the hook did not hear of (a model without hooks: every segment).
  for (size_t s = 0; s < folded_.size(); ++s) fold(s);
  in_last_ = false;
  return static_cast<float>(loss);
}

}  // namespace ptrain
