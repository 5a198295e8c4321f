#pragma once
// Pipeline model parallelism: the model's layers split into S stages, one
// per worker. Every step, the stages' batch goes through them as M
// micro-batches (run.microbatches): stage s runs its layers forward on each
// and sends the activations to stage s + 1, the last stage scores them, and
// the gradients of the activations come back stage by stage, each stage
// summing its parameters' gradients over the micro-batches before it updates
// its own parameters. The update is the one a single worker accumulating the
// same micro-batches would make (core/microbatch_sum.hpp), bit for bit.
//
// The schedule (core/pipeline_schedule.hpp) orders each stage's passes:
// GPipe, or 1F1B, which holds fewer micro-batches' activations. Each
// worker's replica keeps its stage's layers alone (Model::keep_layers), so
// the first pipeline's stages evaluate the model together, send worker 0
// their parameters for the result and the saved model, and write their own
// into their checkpoint parts.
//
// With W = G x S workers, G pipelines run side by side (data x pipeline),
// each on its own shard of the data: worker r is stage r mod S of pipeline
// r / S, and the G workers holding a stage average its gradient by
// all-reduce among themselves (comm/subgroup_communicator.hpp, with the
// codec) before they update it, as hybrid's replicas do the whole model's.
#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/fields.hpp"
#include "core/pipeline_schedule.hpp"
#include "core/problems.hpp"
#include "sync/hybrid_allreduce.hpp"
#include "sync/pipeline_stage_stats.hpp"
#include "sync/strategy.hpp"

namespace ptrain {

// Without boundaries, what a pipeline's stages are balanced by.
enum class PipelineBalance { Time, Parameters };

template <>
struct EnumText<PipelineBalance> {
  static constexpr std::array<std::string_view, 2> names = {"time", "parameters"};
};

struct PipelineOptions {
  static constexpr std::string_view name = "pipeline";
  static constexpr std::string_view summary =
      "pipeline model parallelism: the model's layers split into stages, one per worker, the batch flowing "
      "through them as micro-batches (GPipe or 1F1B)";
  static constexpr bool takes_codec = true;  // the pipelines exchange each stage's gradients
  static constexpr bool distributed = true;  // runs on MPI ranks too
  static constexpr bool checkpoints = true;  // saves and resumes its whole state
  static constexpr bool pipeline = true;     // its stages share one batch; it takes run.microbatches itself
  // A stage waits for each message between its passes, where MPI's polling
  // wait answers sooner than Gloo's sleeping one (docs/benchmarks.md).
  static constexpr bool mpi_by_default = true;
  int stages = 0;
  PipelineSchedule schedule = PipelineSchedule::OneForwardOneBackward;
  std::vector<int64_t> boundaries;
  PipelineBalance balance = PipelineBalance::Parameters;
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::Ring;
  ByteSize bucket_size{size_t{25} << 20};
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("stages", s.stages, "stages the model's layers are split into, one worker each (0: every worker)",
          Range::non_negative());
    visit("schedule", s.schedule,
          "the order of each stage's passes: gpipe (every forward, then every backward) or 1f1b (one forward, one "
          "backward in turn: stage s holds at most S - s micro-batches' activations)",
          Range{});
    visit("boundaries", s.boundaries,
          "the first layer of each stage after the first, comma-separated (none: stages balanced by --balance)",
          Range::any_count());
    visit("balance", s.balance,
          "without boundaries, what the stages are balanced by: parameters (their counts) or time (each layer's "
          "forward and backward measured on worker 0's first micro-batch at the first step, the slowest stage made "
          "as quick as can be; the cut then differs from run to run, and with several pipelines so may what a "
          "sparse codec selects of a stage's gradient)",
          Range{});
    visit("allreduce", s.allreduce,
          "with several pipelines, how the workers holding a stage all-reduce its gradients: ring, hd or tree "
          "(native and hierarchical: ring)",
          Range{});
    visit("bucket_size", s.bucket_size, "with several pipelines, a stage's gradients are all-reduced in buckets of at "
          "most this size, last layers first", Range::positive());
  }
  int stages_of(int workers) const { return stages > 0 ? stages : workers; }
  void check(int workers, const std::string& prefix, Problems& problems) const;
  std::unique_ptr<StrategyGroup> make_group(const StrategyConfig& config, size_t num_params, int workers) const;
};

class PipelineGroup : public StrategyGroup {
 public:
  PipelineGroup(const PipelineOptions& options, const StrategyConfig& config, int workers)
      : options_(options), config_(config), workers_(workers) {}
  std::unique_ptr<WorkerStrategy> for_worker(Model& model, Communicator& comm) override;

 private:
  PipelineOptions options_;
  StrategyConfig config_;
  int workers_;
};

}  // namespace ptrain
