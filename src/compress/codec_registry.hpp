#pragma once
// The codecs a run can choose (--compress, the plan's `codec`). Adding a codec
// is one file (its options struct with `name`, `fields` and `make`, and the
// Codec it makes) and one line in the list below.
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "compress/codec.hpp"
#include "compress/dgc_codec.hpp"
#include "compress/fp16_codec.hpp"
#include "compress/int8_codec.hpp"
#include "compress/topk_codec.hpp"
#include "core/registry.hpp"

namespace ptrain {

// Dense fp32 gradients, as they are.
struct NoCompression {
  static constexpr std::string_view name = "none";
  static constexpr std::string_view summary = "dense fp32 gradients";
  template <class Self, class Visit>
  static void fields(Self&, Visit&&) {}
  std::unique_ptr<Codec> make(const CodecRange&, uint64_t, float) const { return nullptr; }
  double dense_bytes_per_value() const { return 4; }
  static constexpr bool summed_on_the_wire = true;
};

using CodecRegistry = Registry<NoCompression, Fp16Options, Int8Options, TopkOptions, DgcOptions>;
using CodecChoice = CodecRegistry::Choice;

// What a run hands its codecs: the choice, the run's seed and, when the codec
// applies momentum itself (DGC's correction), the optimizer's momentum.
struct CodecConfig {
  CodecChoice choice;  // NoCompression by default
  uint64_t seed = 1;
  float momentum = 0;  // > 0 only when the codec takes the optimizer's momentum over
};

// True unless the choice is NoCompression.
bool compresses(const CodecChoice& choice);

// Whether the codec would apply a momentum optimizer's momentum itself (DGC's
// correction on or auto); `required`: it was asked for explicitly (on).
bool takes_momentum(const CodecChoice& choice, bool* required = nullptr);

// For the step-time model: the bytes a value costs when the codec's output is
// summed in a dense exchange (none 4, fp16 2, int8 about 1), or nullopt for a
// codec that cannot be (a sparse one, all-gathered instead).
std::optional<double> dense_bytes_per_value(const CodecChoice& choice);
// True for the codecs whose messages are sparse (index, value) pairs.
bool sparse(const CodecChoice& choice);
// True when a dense exchange sums the codec's messages as they are (none,
// fp16); the others' messages are all-gathered and decoded by every worker.
bool summed_on_the_wire(const CodecChoice& choice);

// One worker's codec for one range; nullptr without compression. `worker`
// seeds the codec's own randomness (derived from config.seed).
std::unique_ptr<Codec> make_codec(const CodecConfig& config, const CodecRange& range, int worker);

}  // namespace ptrain
