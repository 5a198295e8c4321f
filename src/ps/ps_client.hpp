#pragma once
// A worker's side of the parameter server: pull the parameters from every
// shard, push a gradient slice to each (encoded by one codec per shard, as
// the codecs keep per-range state), and the few questions a coordinated
// schedule asks shard 0. Ranks 0..W-1 of the communicator are workers,
// W..W+S-1 the shards.
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "compress/codec_registry.hpp"
#include "compress/pull_codec_registry.hpp"
#include "core/flat_layout.hpp"
#include "core/state_stream.hpp"
#include "ps/ps_protocol.hpp"
#include "ps/server_stats.hpp"
#include "ps/shard_ranges.hpp"

namespace ptrain {

class PsClient {
 public:
  // `patience`: how long to wait for a shard's answer. Longer than the shards'
  // own timeout, so that a shard waiting on a missing worker names it first.
  PsClient(Communicator& comm, int workers, std::vector<ShardRange> ranges, const CodecConfig& codec,
           const PullCodecChoice& pull, const FlatLayout& layout, std::string strategy,
           std::chrono::milliseconds patience);

  int worker() const { return comm_.rank(); }
  // Worker 0, before anyone's first step: every shard's initial parameters.
  void init(std::span<const float> params);
  // Shard 0's answer: take a step (and pull at least which version), or the epoch is over.
  PsDecision begin();
  // Every shard's parameters into `params`, once the shard has taken `min_version`
  // updates and received `min_received` pushes. Remembers each shard's version.
  // With a pull codec a shard may send how its parameters changed since this
  // worker's last pull, added to what `params` holds of its range, which must
  // be what the last pull left there; `exact` asks for the dense parameters.
  void pull(std::span<float> params, uint64_t min_version, uint64_t min_received, bool exact = false);
  uint64_t pulled_version(size_t shard) const { return pulled_[shard]; }
  // ps-backup: whether shard 0 takes this worker's gradient for `version`.
  bool claim(uint64_t version);
  // Each shard's slice of `grad`, tagged with the version pulled from that shard.
  void push(std::span<const float> grad, const StepInfo& info);
  // This worker failed and leaves; `holding_ticket`: it began a step it never pushed.
  void leave(bool holding_ticket);
  // This worker diverged: the run ends at the next step every worker can
  // agree on; `holding_ticket` as for leave().
  void stop_run(bool holding_ticket);
  // Checkpoints, worker 0 between steps: each shard's whole state, once it
  // holds `min_version` updates and `min_received` pushes (and has applied them).
  std::vector<std::vector<std::byte>> save(uint64_t min_version, uint64_t min_received);
  // Worker 0, before anyone's first step, instead of init(): the states save() returned.
  void restore(const std::vector<std::vector<std::byte>>& states);
  // This worker's codecs' state (one per shard).
  void save_codecs(StateWriter& out) const;
  void load_codecs(StateReader& in);
  size_t shards() const { return ranges_.size(); }
  // Worker 0, after every worker is done: each shard's statistics; the shards stop.
  std::vector<ServerStats> finish();
  CodecStats codec_stats() const;

 private:
  void send(size_t shard, const PsRequest& request, std::span<const std::byte> payload = {});
  // One answer from each shard in `shards` (by their replies' sender), in shard order.
  std::vector<std::vector<std::byte>> answers(size_t shards, const char* what);
  int shard_rank(size_t shard) const { return workers_ + static_cast<int>(shard); }

  Communicator& comm_;
  int workers_;
  std::vector<ShardRange> ranges_;
  std::string strategy_;
  std::vector<std::unique_ptr<Codec>> codecs_;  // one per shard; empty without compression
  std::vector<std::unique_ptr<Codec>> pull_decoders_;  // one per shard; empty for dense pulls
  std::vector<uint64_t> pulled_;
  std::chrono::milliseconds patience_;
};

}  // namespace ptrain
