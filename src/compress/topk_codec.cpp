#include "compress/topk_codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compress/magnitude_select.hpp"
#include "core/error.hpp"

namespace ptrain {

std::unique_ptr<Codec> TopkOptions::make(const CodecRange& range, uint64_t /*seed: top-k is exact*/, float) const {
  return std::make_unique<TopkCodec>(*this, range);
}

TopkCodec::TopkCodec(const TopkOptions& options, const CodecRange& range)
    : layout_("topk", range.count, {}),
      k_(range.count == 0
             ? 0
             : std::clamp<size_t>(
                   static_cast<size_t>(std::llround(options.ratio * static_cast<double>(range.count))), 1,
                   range.count)),
      error_feedback_(options.error_feedback) {
  if (!(options.ratio > 0 && options.ratio <= 1))
    throw Error(fmt::format("topk codec: ratio must be in (0, 1] (got {})", options.ratio));
  if (error_feedback_) residual_.assign(range.count, 0.0f);
  selected_.reserve(k_);
}

void TopkCodec::encode_into(std::span<const float> grad, const StepInfo& /*step*/, Encoded& e) {
  if (grad.size() != layout_.count())
    throw Error(
        fmt::format("topk: a gradient of {} elements for a range of {}", grad.size(), layout_.count()));
  std::span<const float> source = grad;
  if (error_feedback_) {
    float* r = residual_.data();
    const float* g = grad.data();
    for (size_t i = 0; i < grad.size(); ++i) r[i] += g[i];
    source = residual_;
  }
  const MagnitudeCut cut = exact_magnitude_cut(source, layout_.sparse(), k_, false);
  selected_.clear();
  append_cut_indices(source, layout_.sparse(), cut, selected_);

  SparseMessageWriter writer(e, layout_, k_);
  for (size_t slot = 0; slot < selected_.size(); ++slot) {
    const uint32_t i = selected_[slot];
    writer.set_pair(slot, i, source[i]);
  }
  if (error_feedback_)
    for (const uint32_t i : selected_) residual_[i] = 0.0f;

  stats_.dense_bytes += sizeof(float) * grad.size();
  stats_.encoded_bytes += e.bytes.size();
  stats_.selected += selected_.size();
}

void TopkCodec::decode_add(const Encoded& e, std::span<float> out) const {
  sparse_decode_add(e, layout_, out, "topk");
}

}  // namespace ptrain
