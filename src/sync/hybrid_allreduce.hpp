#pragma once
// The seed's hybrid scheme: every worker computes the gradient of its own
// mini-batch, the G gradients are averaged with an all-reduce, and every
// replica applies the same update, so all replicas stay identical. It behaves
// as one worker with a G times larger batch.
#include <string_view>

#include "core/fields.hpp"
#include "sync/gradient_reducer.hpp"
#include "sync/strategy.hpp"

namespace ptrain {

template <>
struct EnumText<AllreduceAlgorithm> {
  static constexpr std::array<std::string_view, 5> names = {"native", "ring", "hd", "tree", "hierarchical"};
};

struct HybridOptions {
  static constexpr std::string_view name = "hybrid";
  static constexpr std::string_view summary =
      "synchronous data parallelism: the mean gradient by all-reduce, every replica the same update";
  static constexpr bool takes_codec = true;   // gradients are exchanged, so they may be compressed
  static constexpr bool distributed = true;   // runs on MPI ranks too
  static constexpr bool checkpoints = true;   // saves and resumes its whole state
  static constexpr bool local_workers = true; // worker threads inside MPI ranks (run.local_workers)
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::Native;
  ByteSize bucket_size{size_t{25} << 20};  // PyTorch DDP's default
  bool overlap = true;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("allreduce", s.allreduce,
          "the gradient all-reduce: native (the backend's own), ring, hd, tree, or hierarchical (the threads of each "
          "MPI rank in shared memory, then a ring between the ranks, each thread its slice; on threads alone the "
          "shared-memory sum)",
          Range{});
    visit("bucket_size", s.bucket_size,
          "gradients are all-reduced in buckets of at most this size, last layers first, a layer's tensors "
          "together",
          Range::positive());
    visit("overlap", s.overlap, "start each bucket's all-reduce while backward still runs (LibTorch models)",
          Range{});
  }
  std::unique_ptr<StrategyGroup> make_group(const StrategyConfig& config, size_t num_params, int workers) const;
};

class HybridAllreduce : public WorkerStrategy {
 public:
  HybridAllreduce(Model& model, Communicator& comm, const HybridOptions& options, const StrategyConfig& config);
  ~HybridAllreduce() override;
  void start() override;
  float step(const Batch& batch, const StepInfo& info) override;
  CodecStats codec_stats() const override { return reducer_->codec_stats(); }
  std::vector<std::pair<std::string, std::string>> notes() const override;
  // The optimizer is every replica's same copy; the codecs' residuals are each worker's own.
  void save_state(StateWriter& out) override { reducer_->save_state(out); }
  void load_state(StateReader& in) override { reducer_->load_state(in); }
  bool replicated() const override { return true; }
  void save_shared_state(StateWriter& out) const override { optimizer_->save_state(out); }
  void load_shared_state(StateReader& in) override { optimizer_->load_state(in); }

 private:
  Model& model_;
  Communicator& comm_;
  HybridOptions options_;
  bool overlapping_ = false;
  OptimizerConfig optimizer_config_;  // its lr and schedule: the rate of each step
  std::unique_ptr<Optimizer> optimizer_;
  // Where this worker's steps went (seconds, summed), for notes().
  struct Phases {
    double compute = 0;                    // forward and backward (buckets all-reduced beside it with overlap)
    double exchange = 0;                   // after backward, waiting for buckets to be all-reduced
    double optimizer = 0;                  // updating the parameters, bucket by bucket
    double optimizer_beside_exchange = 0;  // of which while later buckets were still being all-reduced
    uint64_t steps = 0;
  } phases_;
  std::unique_ptr<GradientReducer> reducer_;
};

class HybridGroup : public StrategyGroup {
 public:
  HybridGroup(HybridOptions options, StrategyConfig config) : options_(options), config_(std::move(config)) {}
  std::unique_ptr<WorkerStrategy> for_worker(Model& model, Communicator& comm) override {
    return std::make_unique<HybridAllreduce>(model, comm, options_, config_);
  }

 private:
  HybridOptions options_;
  StrategyConfig config_;
};

}  // namespace ptrain
