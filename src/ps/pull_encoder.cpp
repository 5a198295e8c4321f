#include "ps/pull_encoder.hpp"

#include <fmt/format.h>

#include "ps/ps_protocol.hpp"

namespace ptrain {

PullEncoder::PullEncoder(const PullCodecChoice& choice, const CodecRange& range, int workers)
    : count_(range.count), refresh_every_(pull_refresh_every(choice)), codec_(make_pull_codec(choice, range)) {
  if (!compresses()) return;
  held_.resize(static_cast<size_t>(workers));
  change_.resize(count_);
}

std::span<const std::byte> PullEncoder::reply(int worker, std::span<const float> params, uint64_t version,
                                              bool exact) {
  counts_.pulls++;
  counts_.dense_bytes += params.size() * sizeof(float);
  Held* held = compresses() ? &held_.at(static_cast<size_t>(worker)) : nullptr;
  const bool dense = !held || exact || !held->known || (refresh_every_ > 0 && held->since_dense + 1 >= refresh_every_);
  if (dense) {
    if (held) {
      held->values.assign(params.begin(), params.end());
      held->known = true;
      held->since_dense = 0;
    }
    counts_.dense_pulls++;
    counts_.wire_bytes += params.size() * sizeof(float);
    if (dense_message_.empty())
      dense_message_ = ps_message(PsParamsHeader{version, static_cast<uint32_t>(PullEncoding::Dense)},
                                  std::as_bytes(params));
    return dense_message_;
  }
  held->since_dense++;
  for (size_t i = 0; i < count_; ++i) change_[i] = params[i] - held->values[i];
  codec_->encode_into(change_, StepInfo{}, encoded_);
  // The worker adds exactly this to what it holds.
  codec_->decode_add(encoded_, held->values);
  counts_.wire_bytes += encoded_.bytes.size();
  coded_message_ = ps_message(PsParamsHeader{version, static_cast<uint32_t>(PullEncoding::Coded)}, encoded_.bytes);
  return coded_message_;
}

void PullEncoder::save_state(StateWriter& out) const {
  for (size_t w = 0; w < held_.size(); ++w) {
    const Held& h = held_[w];
    out.put_value(fmt::format("pull.{}.known", w), static_cast<uint8_t>(h.known));
    out.put_value(fmt::format("pull.{}.since_dense", w), h.since_dense);
    if (h.known) out.put(fmt::format("pull.{}.values", w), h.values);
  }
}

void PullEncoder::load_state(StateReader& in) {
  for (size_t w = 0; w < held_.size(); ++w) {
    Held& h = held_[w];
    h.known = in.take_value<uint8_t>(fmt::format("pull.{}.known", w)) != 0;
    h.since_dense = in.take_value<uint64_t>(fmt::format("pull.{}.since_dense", w));
    h.values.assign(h.known ? count_ : 0, 0.0f);
    if (h.known) in.take(fmt::format("pull.{}.values", w), std::span<float>(h.values));
  }
  dense_message_.clear();
}

}  // namespace ptrain
