#pragma once
// Gradient codecs (DESIGN.md): what a worker sends instead of its fp32
// gradient. A codec belongs to one worker and one contiguous range of the flat
// gradient (a bucket), and may keep state between steps (residuals of what it
// did not send, DGC's velocity). Any worker's codec of the same kind and
// configuration decodes any other's output.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/state_stream.hpp"

namespace ptrain {

// What a codec knows of the step it encodes for.
// A message larger than the caches goes to memory anyway: the fp16 and int8
// codecs write one past them, without reading each line first. A smaller one
// stays cached for the exchange.
inline constexpr size_t kBypassCacheBytes = size_t{8} << 20;

struct StepInfo {
  size_t step = 0;   // 0-based, counted over the whole run
  double epoch = 0;  // epochs done before this step, fractional (step / steps per epoch): for warm-up
  int workers = 1;   // N, for DGC's clipping threshold N^(-1/2)
};

// One worker's encoded gradient as it goes on the wire.
struct Encoded {
  size_t count = 0;              // floats it decodes to
  std::vector<std::byte> bytes;  // the wire form; its size is what the codec costs
};

// Cumulative over a run, for the report and the terminal.
struct CodecStats {
  uint64_t dense_bytes = 0;    // fp32 bytes handed to encode()
  uint64_t encoded_bytes = 0;  // bytes encode() produced
  uint64_t saturated = 0;      // fp16: finite values beyond the half range, sent as +-65504
  uint64_t selected = 0;       // sparse codecs: elements sent
  uint64_t refinements = 0;    // DGC: threshold refinements after the sampled estimate missed
  // The same two byte counts over the steps at the target density only (after
  // DGC's warm-up; every step for the other codecs).
  uint64_t steady_dense_bytes = 0;
  uint64_t steady_encoded_bytes = 0;

  CodecStats& operator+=(const CodecStats& o) {
    dense_bytes += o.dense_bytes, encoded_bytes += o.encoded_bytes, saturated += o.saturated;
    selected += o.selected, refinements += o.refinements;
    steady_dense_bytes += o.steady_dense_bytes, steady_encoded_bytes += o.steady_encoded_bytes;
    return *this;
  }
  // Dense fp32 bytes over bytes on the wire; 1 when nothing was encoded (no compression).
  double ratio() const {
    return encoded_bytes > 0 ? static_cast<double>(dense_bytes) / static_cast<double>(encoded_bytes) : 1.0;
  }
  double steady_ratio() const {
    return steady_encoded_bytes > 0
               ? static_cast<double>(steady_dense_bytes) / static_cast<double>(steady_encoded_bytes)
               : ratio();
  }
};

// The range of the flat gradient a codec encodes, and which parts of it are
// 1-D tensors (biases), which DGC can send dense.
struct CodecRange {
  size_t count = 0;
  std::vector<std::pair<size_t, size_t>> one_dim;  // [begin, end) within the range, ascending
};

class FlatLayout;
// The range [begin, end) of a model's flat buffer, with the parts of its 1-D
// tensors that fall inside it.
CodecRange codec_range(const FlatLayout& layout, size_t begin, size_t end);

class Codec {
 public:
  virtual ~Codec() = default;
  virtual std::string name() const = 0;

  // Encodes this worker's `grad` (grad.size() == the range's count) for the
  // step into `out`, reusing its buffer: a caller that keeps one Encoded per
  // range between steps spares a fresh allocation (and its page faults) each step.
  virtual void encode_into(std::span<const float> grad, const StepInfo& step, Encoded& out) = 0;
  Encoded encode(std::span<const float> grad, const StepInfo& step) {
    Encoded e;
    encode_into(grad, step, e);
    return e;
  }
  // out += decoded(e). `e` may come from another worker's codec of the same kind.
  virtual void decode_add(const Encoded& e, std::span<float> out) const = 0;

  // True when the wire form is an array of IEEE halves that the communicator
  // may sum element by element (fp16): then it is all-reduced in compressed
  // form; otherwise every worker's bytes are all-gathered and decoded.
  virtual bool summable_as_half() const { return false; }
  // True while the codec sends more than its target (DGC's warm-up).
  virtual bool warming_up(const StepInfo& /*step*/) const { return false; }
  // True when the codec applies momentum itself (DGC's momentum correction):
  // the optimizer must then not add its own.
  virtual bool applies_momentum() const { return false; }

  const CodecStats& stats() const { return stats_; }

  // The codec's whole state between steps (its counters and what save_own
  // writes), for checkpoints.
  void save_state(StateWriter& out) const {
    out.put_value("codec.stats", stats_);
    save_own(out);
  }
  void load_state(StateReader& in) {
    stats_ = in.take_value<CodecStats>("codec.stats");
    load_own(in);
  }

 protected:
  // What a codec with memory keeps between steps (residuals, DGC's u and v, a
  // random generator); stateless codecs write nothing.
  virtual void save_own(StateWriter& /*out*/) const {}
  virtual void load_own(StateReader& /*in*/) {}

  CodecStats stats_;
};

}  // namespace ptrain
