#pragma once
// One parameter-server shard: it holds a contiguous range of the parameters
// and their optimizer state, applies the gradients workers push for it and
// answers their pulls. It serves on a communicator of W workers (ranks
// 0..W-1) and S shards (ranks W..W+S-1) until worker 0 sends Finish.
//
// A shard applies gradients in one of two ways:
//  - aggregated (ps-sync, ps-backup): it collects `gradients_per_update`
//    gradients pushed for its current version, sums them in worker order,
//    and takes one optimizer step with their mean;
//  - one by one (ssp, async): every gradient is a step of its own, scaled or
//    dropped by the staleness rule.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "compress/codec_registry.hpp"
#include "optim/optimizer.hpp"
#include "ps/ps_protocol.hpp"
#include "ps/pull_encoder.hpp"
#include "ps/server_stats.hpp"
#include "ps/shard_ranges.hpp"
#include "ps/step_coordinator.hpp"

namespace ptrain {

// The scale of the step for a gradient of this staleness; 0 drops it.
using StalenessRule = std::function<double(uint64_t staleness)>;

struct ShardConfig {
  std::string strategy;  // for messages, e.g. "ps-sync"
  int shard = 0;
  int workers = 1;
  ShardRange range;
  OptimizerConfig optimizer;
  CodecConfig codec;       // to decode what the workers' codecs encoded
  CodecRange codec_range;  // this shard's range, as the workers' codecs see it
  PullCodecChoice pull;    // what a pull sends: the dense parameters, or their change through a codec
  bool aggregated = true;           // false: one by one
  size_t gradients_per_update = 1;  // aggregated: W (ps-sync) or W - b (ps-backup)
  StalenessRule staleness_rule;  // one-by-one mode; empty: every gradient at full scale
  std::chrono::milliseconds timeout{60000};
};

class ShardServer {
 public:
  // `coordinator` only on shard 0.
  ShardServer(Communicator& comm, ShardConfig config, std::unique_ptr<StepCoordinator> coordinator);
  // Serves until Finish. Throws ptrain::Error on a malformed message, or when
  // an aggregated update waits longer than the timeout for a worker's gradient
  // (naming the workers it waits for).
  void serve();

 private:
  struct HeldPull {
    int worker;
    PsRequest request;
  };
  void handle(int from, std::vector<std::byte>&& message);
  // `message` is the whole request; aggregated mode keeps it until the update.
  void push(const PsRequest& request, std::vector<std::byte>&& message);
  void apply_aggregated();
  // Versions published since the one the push's gradient was computed on.
  uint64_t staleness_of(const PsRequest& request) const;
  void apply_one(const PsRequest& request, std::span<const std::byte> payload);
  void decode_into(std::span<const std::byte> payload, std::span<float> out, int worker) const;
  bool pull_ready(const PsRequest& request) const;
  // Checkpoints: the shard's whole state (parameters, optimizer, decoder,
  // counters, statistics, shard 0's coordinator), and back.
  std::vector<std::byte> save_state() const;
  void load_state(std::span<const std::byte> state, int from);
  void answer_pull(const HeldPull& pull);
  // The statistics so far, with what the pulls sent.
  ServerStats stats() const;
  void answer_held();
  void reply(int worker, std::span<const std::byte> message);
  std::string waiting_for() const;

  Communicator& comm_;
  ShardConfig config_;
  std::unique_ptr<StepCoordinator> coordinator_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<Codec> decoder_;  // nullptr: gradients come as raw floats
  std::vector<float> params_, sum_;
  bool initialized_ = false;
  uint64_t version_ = 0;   // optimizer steps taken
  uint64_t received_ = 0;  // pushes (and unpushed tickets of workers that left)
  // Aggregated mode: the push requests (header and payload) for the current version, by worker.
  std::map<int, std::vector<std::byte>> collected_;
  // What each pull sends (and, with a pull codec, what each worker holds).
  PullEncoder pulls_;
  std::vector<HeldPull> held_pulls_;
  std::vector<HeldPull> held_saves_;
  std::vector<int> held_begins_;
  ServerStats stats_;
};

}  // namespace ptrain
