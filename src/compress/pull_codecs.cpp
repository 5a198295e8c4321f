#include "compress/pull_codecs.hpp"

#include "compress/fp16_codec.hpp"
#include "compress/topk_codec.hpp"

namespace ptrain {

std::unique_ptr<Codec> Fp16PullOptions::make(const CodecRange& range) const {
  return std::make_unique<Fp16Codec>(range);
}

// Nearest rounding: the shard's copy of what the worker holds takes the same
// rounded change, so an unbiased rounding would buy nothing (and its
// generator, whose seed this is, is never drawn from).
std::unique_ptr<Codec> Int8PullOptions::make(const CodecRange& range) const {
  Int8Options o;
  o.chunk = chunk;
  o.rounding = Rounding::Nearest;
  return std::make_unique<Int8Codec>(o, range, /*seed=*/0);
}

// No residual: what is not sent stays in the next pull's change.
std::unique_ptr<Codec> TopkPullOptions::make(const CodecRange& range) const {
  TopkOptions o;
  o.ratio = ratio;
  o.error_feedback = false;
  return std::make_unique<TopkCodec>(o, range);
}

}  // namespace ptrain
