#pragma once
// The codecs of parameter-server pulls (the plan's `pull`, --pull), apart from
// those of the gradients workers push (compress/codec_registry.hpp): adding
// one is an options struct (compress/pull_codecs.hpp) and one line below.
#include <cstdint>
#include <memory>

#include "compress/pull_codecs.hpp"
#include "core/registry.hpp"

namespace ptrain {

using PullCodecRegistry = Registry<DensePullOptions, Fp16PullOptions, Int8PullOptions, TopkPullOptions>;
using PullCodecChoice = PullCodecRegistry::Choice;

// True unless every pull is the dense parameters.
bool compresses_pulls(const PullCodecChoice& choice);
// Every how many pulls a worker gets the dense parameters (0: only its first).
size_t pull_refresh_every(const PullCodecChoice& choice);
// For the step-time model: the bytes a pulled parameter costs on average.
double pull_bytes_per_value(const PullCodecChoice& choice);

// The codec of one shard's range for pulls (nullptr for dense pulls): it
// encodes every worker's, and any such codec decodes another's.
std::unique_ptr<Codec> make_pull_codec(const PullCodecChoice& choice, const CodecRange& range);

}  // namespace ptrain
