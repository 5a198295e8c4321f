#include "compress/codec.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "compress/dgc_codec.hpp"
#include "compress/fp16_codec.hpp"
#include "compress/int8_codec.hpp"
#include "compress/topk_codec.hpp"
#include "core/error.hpp"
#include "core/flat_layout.hpp"
#include "core/rng.hpp"

namespace ptrain {

const std::vector<std::string>& codec_names() {
  static const std::vector<std::string> names = {"none", "fp16", "int8", "topk", "dgc"};
  return names;
}

void validate_codec_config(const CodecConfig& c) {
  bool known = false;
  for (const auto& n : codec_names()) known |= n == c.name;
  if (!known) throw Error("--compress: unknown codec '" + c.name + "' (choose none, fp16, int8, topk or dgc)");
  if (c.int8_chunk < 1) throw Error("--int8-chunk must be at least 1");
  if (!(c.topk_ratio > 0 && c.topk_ratio <= 1))
    throw Error(fmt::format("--topk-ratio must be in (0, 1] (got {})", c.topk_ratio));
  const DgcConfig& d = c.dgc;
  if (!(d.density > 0 && d.density <= 1))
    throw Error(fmt::format("--dgc-density must be in (0, 1] (got {})", d.density));
  if (!(d.sample_fraction > 0 && d.sample_fraction <= 1))
    throw Error(fmt::format("--dgc-sample must be in (0, 1] (got {})", d.sample_fraction));
  if (!(d.momentum >= 0 && d.momentum < 1))
    throw Error(fmt::format("--momentum must be in [0, 1) for DGC's momentum correction (got {})", d.momentum));
  if (!(d.clip_norm >= 0)) throw Error(fmt::format("--dgc-clip must be >= 0 (got {})", d.clip_norm));
  if (!(d.warmup_epochs >= 0))
    throw Error(fmt::format("--dgc-warmup must be >= 0 epochs (got {})", d.warmup_epochs));
}

CodecRange codec_range(const FlatLayout& layout, size_t begin, size_t end) {
  CodecRange range{end - begin, {}};
  for (const FlatSegment& seg : layout.segments()) {
    if (seg.shape.size() != 1 || seg.numel == 0) continue;
    const size_t a = std::max(seg.offset, begin), b = std::min(seg.offset + seg.numel, end);
    if (a < b) range.one_dim.emplace_back(a - begin, b - begin);
  }
  return range;
}

std::unique_ptr<Codec> make_codec(const CodecConfig& config, const CodecRange& range, int worker) {
  validate_codec_config(config);
  const uint64_t seed = derive_seed(config.seed, 1000 + static_cast<uint64_t>(worker));
  if (config.name == "none") return nullptr;
  if (config.name == "fp16") return std::make_unique<Fp16Codec>(config, range, seed);
  if (config.name == "int8") return std::make_unique<Int8Codec>(config, range, seed);
  if (config.name == "topk") return std::make_unique<TopkCodec>(config, range, seed);
  return std::make_unique<DgcCodec>(config, range, seed);
}

}  // namespace ptrain
