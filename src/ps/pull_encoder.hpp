#pragma once
// What a parameter-server shard sends each worker that pulls its range: the
// dense parameters, or the pull codec's encoding of their change since what
// that worker last received (compress/pull_codecs.hpp). For every worker the
// shard keeps a copy of what it holds, and adds to it what the worker will
// decode, with the same decode_add: the copy stays the worker's values bit for
// bit, and whatever one pull leaves out is in the next one's change. A worker's
// first pull, every refresh_every-th, and any pull that asks for exact values
// (evaluation, the end of the run) are dense.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compress/pull_codec_registry.hpp"
#include "core/state_stream.hpp"
#include "ps/ps_protocol.hpp"
#include "ps/server_stats.hpp"

namespace ptrain {

class PullEncoder {
 public:
  PullEncoder(const PullCodecChoice& choice, const CodecRange& range, int workers);

  // The reply to `worker`'s pull: a PsParamsHeader and its payload. `exact`:
  // the dense parameters whatever the codec. The dense reply is built once for
  // every worker that pulls the same parameters, until parameters_changed().
  std::span<const std::byte> reply(int worker, std::span<const float> params, uint64_t version, bool exact);
  void parameters_changed() { dense_message_.clear(); }

  const PullCounts& counts() const { return counts_; }
  void set_counts(const PullCounts& counts) { counts_ = counts; }

  // What each worker holds, for checkpoints (nothing without a pull codec).
  void save_state(StateWriter& out) const;
  void load_state(StateReader& in);

 private:
  struct Held {
    std::vector<float> values;  // what the worker holds of this range
    bool known = false;         // false until its first (dense) pull
    uint64_t since_dense = 0;   // pulls since its last dense one
  };
  bool compresses() const { return codec_ != nullptr; }

  size_t count_;
  size_t refresh_every_;
  std::unique_ptr<Codec> codec_;  // nullptr for dense pulls
  std::vector<Held> held_;
  std::vector<float> change_;
  Encoded encoded_;
  std::vector<std::byte> dense_message_, coded_message_;
  PullCounts counts_;
};

}  // namespace ptrain
