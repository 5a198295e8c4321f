// Pipeline model parallelism through run(): S stages on S workers taking M
// micro-batches end with the bits of one worker accumulating the same M
// micro-batches (both schedules, any cut, the MLP and the CNN), G pipelines
// side by side the bits of G data-parallel workers doing so, evaluation and
// the result see the whole model, a run killed mid-way resumes to the same
// bits, the report says what each stage did, and what cannot run is refused
// saying why.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "core/error.hpp"
#include "data/fashion_mnist.hpp"
#include "model/model_registry.hpp"
#include "run/checkpoint_store.hpp"
#include "run/resume.hpp"
#include "run/run.hpp"
#include "run/run_fixtures.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::data_only;

// The MLP on small Gaussian clusters: four Linear layers, so up to four stages.
RunPlan mlp_plan(int workers, size_t microbatches) {
  RunPlan plan = test::softmax_plan(workers, 12, 2);
  plan.model = MlpOptions{{24, 16, 8}};
  plan.optimizer = AdamOptions{};
  plan.run.microbatches = microbatches;
  plan.run.seed = 7;
  return plan;
}

RunPlan as_pipeline(RunPlan plan, int stages, PipelineSchedule schedule, std::vector<int64_t> boundaries = {},
                    int pipelines = 1, AllreduceAlgorithm allreduce = AllreduceAlgorithm::Ring) {
  PipelineOptions p;
  p.stages = stages;
  p.schedule = schedule;
  p.boundaries = std::move(boundaries);
  p.allreduce = allreduce;
  plan.strategy = p;
  plan.run.workers = stages * pipelines;
  return plan;
}

// The same plan as G data-parallel workers each accumulating the micro-batches.
RunPlan as_data_parallel(RunPlan plan, int workers, AllreduceAlgorithm allreduce) {
  HybridOptions h;
  h.allreduce = allreduce;
  plan.strategy = h;
  plan.run.workers = workers;
  return plan;
}

RunResult run_plan(const RunPlan& plan, RunInputs inputs) {
  World world = make_world(plan);
  return run(plan, world, {}, inputs);
}

void expect_same_run(const RunResult& a, const RunResult& b, const std::string& what) {
  EXPECT_EQ(a.final_params, b.final_params) << what;
  EXPECT_EQ(a.step_losses, b.step_losses) << what;
  ASSERT_EQ(a.epochs.size(), b.epochs.size()) << what;
  for (size_t e = 0; e < a.epochs.size(); ++e) {
    EXPECT_EQ(a.epochs[e].train_loss, b.epochs[e].train_loss) << what;
    // The stages evaluate the model together, to the figures of the whole one.
    EXPECT_EQ(a.epochs[e].test_loss, b.epochs[e].test_loss) << what;
    EXPECT_EQ(a.epochs[e].test_accuracy, b.epochs[e].test_accuracy) << what;
  }
  EXPECT_EQ(a.samples, b.samples) << what << ": a pipeline's stages take one batch together";
}

TEST(Pipeline, StagesGiveTheBitsOfOneWorkerAccumulatingTheSameMicrobatches) {
  const LoadedData data = test::small_clusters();
  for (const size_t m : {1, 3, 4}) {
    RunPlan one = mlp_plan(1, m);
    const RunResult reference = run_plan(one, data_only(data));
    for (const int stages : {2, 3, 4})
      for (const auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneForwardOneBackward}) {
        const std::string what = fmt::format("{} stages, {} micro-batches, {}", stages, m, enum_name(schedule));
        expect_same_run(run_plan(as_pipeline(one, stages, schedule), data_only(data)), reference, what);
      }
  }
}

TEST(Pipeline, AnyCutAndEveryOptimizerGiveTheSameBits) {
  const LoadedData data = test::small_clusters();
  for (auto optimizer : OptimizerRegistry::names()) {
    RunPlan one = mlp_plan(1, 3);
    one.optimizer = *OptimizerRegistry::make(optimizer);
    const RunResult reference = run_plan(one, data_only(data));
    for (const std::vector<int64_t>& cut : {std::vector<int64_t>{1}, {2}, {3}})
      expect_same_run(run_plan(as_pipeline(one, 2, PipelineSchedule::OneForwardOneBackward, cut), data_only(data)),
                      reference, fmt::format("{}, cut at {}", optimizer, cut[0]));
  }
}

// Two pipelines' sums are a + b in either order, so any all-reduce gives the
// bits of two data-parallel workers; with more, the tree adds in rank order
// whatever the buckets.
TEST(Pipeline, PipelinesSideBySideGiveTheBitsOfDataParallelWorkers) {
  const LoadedData data = test::small_clusters();
  for (const auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneForwardOneBackward}) {
    const RunPlan one = mlp_plan(1, 3);
    const RunResult two = run_plan(as_data_parallel(one, 2, AllreduceAlgorithm::Native), data_only(data));
    expect_same_run(run_plan(as_pipeline(one, 2, schedule, {}, 2), data_only(data)), two,
                    fmt::format("2 x 2, {}", enum_name(schedule)));
    const RunResult three = run_plan(as_data_parallel(one, 3, AllreduceAlgorithm::Tree), data_only(data));
    expect_same_run(run_plan(as_pipeline(one, 2, schedule, {}, 3, AllreduceAlgorithm::Tree), data_only(data)), three,
                    fmt::format("3 pipelines of 2 stages, tree, {}", enum_name(schedule)));
  }
  // fp16 rounds each value alone: still the bits of two workers.
  RunPlan half = mlp_plan(1, 2);
  half.codec = Fp16Options{};
  expect_same_run(run_plan(as_pipeline(half, 2, PipelineSchedule::OneForwardOneBackward, {}, 2), data_only(data)),
                  run_plan(as_data_parallel(half, 2, AllreduceAlgorithm::Native), data_only(data)), "2 x 2, fp16");
}

// A codec compresses each stage's buckets, so top-k and DGC pick among a
// stage's gradients rather than the whole model's: every codec trains.
TEST(Pipeline, EveryCodecCompressesWhatThePipelinesExchange) {
  const LoadedData data = test::small_clusters();
  for (auto codec : CodecRegistry::names()) {
    RunPlan plan = as_pipeline(mlp_plan(1, 2), 2, PipelineSchedule::OneForwardOneBackward, {}, 2);
    plan.codec = *CodecRegistry::make(codec);
    plan.optimizer = MomentumOptions{};
    std::visit([](auto& o) { o.lr = 0.05f; }, plan.optimizer);
    std::visit(
        [](auto& c) {
          if constexpr (requires { c.density; }) c.density = 0.2, c.warmup = 1;
          if constexpr (requires { c.ratio; }) c.ratio = 0.2;
        },
        plan.codec);
    const RunResult r = run_plan(plan, data_only(data));
    ASSERT_EQ(r.epochs.size(), 2u) << codec;
    EXPECT_LT(r.epochs.back().train_loss, r.epochs.front().train_loss) << codec;
    EXPECT_GT(r.epochs.back().test_accuracy, 0.5) << codec;  // chance: 1/3 (DGC at 0.2 learns slowest in two epochs)
    CodecStats total;
    for (const auto& c : r.codec) total += c;
    if (compresses(plan.codec)) {
      EXPECT_GT(total.ratio(), 1.5) << codec;
    }
  }
}

TEST(Pipeline, TheCnnOnFashionMnistSplitsAtItsLayers) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST is not installed";
  LoadedData data;
  data.train = load_fashion_mnist(test::kFashionMnistDir, Split::Train).head(480);
  data.test = load_fashion_mnist(test::kFashionMnistDir, Split::Test).head(200);
  RunPlan one = mlp_plan(1, 4);
  one.model = CnnOptions{};
  one.data_controls.standardize = true;
  one.run.epochs = 1;
  one.run.max_steps = 8;
  const RunResult reference = run_plan(one, data_only(data));
  for (const auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneForwardOneBackward})
    expect_same_run(run_plan(as_pipeline(one, 4, schedule), data_only(data)), reference,
                    fmt::format("cnn, 4 stages, {}", enum_name(schedule)));
}

// A model whose stage throws at the forward pass of a chosen step, as if
// the worker were killed there.
class KilledStage : public ModelStage {
 public:
  KilledStage(std::unique_ptr<ModelStage> inner, size_t kill_at, std::atomic<bool>* armed)
      : inner_(std::move(inner)), kill_at_(kill_at), armed_(armed) {}
  float forward(size_t slot, const Batch& micro, const Activations& in, Activations& out) override {
    if (slot == 0 && ++steps_ == kill_at_ && armed_->exchange(false)) throw Error("killed for the test");
    return inner_->forward(slot, micro, in, out);
  }
  void backward(size_t slot, const Activations& grad_out, Activations& grad_in) override {
    inner_->backward(slot, grad_out, grad_in);
  }
  void infer(const Batch& micro, const Activations& in, Activations& out, EvaluationSums& sums) override {
    inner_->infer(micro, in, out, sums);
  }
  size_t held_bytes() const override { return inner_->held_bytes(); }
  void clear() override { inner_->clear(); }

 private:
  std::unique_ptr<ModelStage> inner_;
  size_t steps_ = 0, kill_at_;
  std::atomic<bool>* armed_;
};

class KilledModel : public Model {
 public:
  KilledModel(std::unique_ptr<Model> inner, size_t kill_at, std::atomic<bool>* armed)
      : inner_(std::move(inner)), kill_at_(kill_at), armed_(armed) {}
  std::string name() const override { return inner_->name(); }
  const FlatLayout& layout() const override { return inner_->layout(); }
  std::span<float> params() override { return inner_->params(); }
  std::span<float> grads() override { return inner_->grads(); }
  float forward_backward(const Batch& batch) override { return inner_->forward_backward(batch); }
  Metrics evaluate(const Dataset& data) override { return inner_->evaluate(data); }
  std::vector<ModelLayer> layers(std::string& why_not) const override { return inner_->layers(why_not); }
  bool keep_layers(size_t first, size_t end) override { return inner_->keep_layers(first, end); }
  std::unique_ptr<ModelStage> stage(size_t first, size_t end) override {
    return std::make_unique<KilledStage>(inner_->stage(first, end), kill_at_, armed_);
  }

 private:
  std::unique_ptr<Model> inner_;
  size_t kill_at_;
  std::atomic<bool>* armed_;
};

TEST(Pipeline, ARunKilledMidwayResumesToTheBitsOfTheWholeRun) {
  const LoadedData data = test::small_clusters();  // 60 steps an epoch
  for (const auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneForwardOneBackward}) {
    RunPlan plan = as_pipeline(mlp_plan(1, 3), 3, schedule);
    plan.optimizer = MomentumOptions{};
    if (schedule == PipelineSchedule::GPipe) {  // two pipelines of 3 stages with DGC: each stage's codecs resume too
      DgcOptions dgc;
      dgc.density = 0.2, dgc.warmup = 1;
      plan.codec = dgc;
      plan.run.workers = 6;
      plan.run.batch = 6;  // the same 60 steps an epoch
    }
    const RunResult whole = run_plan(plan, data_only(data));

    test::ScratchDir dir;
    plan.run.checkpoint_dir = dir.file("ckpt");
    plan.run.checkpoint_every = Cadence{7, 0};
    std::atomic<bool> armed{true};
    RunInputs killed = data_only(data);
    killed.model = [&](const ModelInput& in) -> std::unique_ptr<Model> {
      return std::make_unique<KilledModel>(make_model(plan.model, in), 75, &armed);
    };
    const std::string message = test::error_message([&] { run_plan(plan, killed); });
    EXPECT_NE(message.find("killed for the test"), std::string::npos) << message;
    EXPECT_EQ(newest_checkpoint(plan.run.checkpoint_dir).step, 70u);

    RunInputs resume = data_only(data);
    resume.resume = plan.run.checkpoint_dir;
    const RunResult resumed = run_plan(plan, resume);
    EXPECT_EQ(resumed.final_params, whole.final_params) << enum_name(schedule);
    EXPECT_EQ(resumed.step_losses, whole.step_losses) << enum_name(schedule);
  }
}

// A model whose parameters, gradients and Adam's moments pass one worker's
// limit is refused on one worker and trains split in two stages, to the bits
// of the unlimited run: each stage's worker keeps its own layers alone, its
// checkpoint part holds them alone, and the report says what it held.
TEST(Pipeline, AModelOverOneWorkersMemoryLimitTrainsOnlyWhenSplit) {
  const LoadedData data = test::small_clusters();
  RunPlan one = mlp_plan(1, 2);
  one.model = MlpOptions{{64, 64, 64}};  // 704 + 4160 + 4160 + 195 parameters
  const RunResult unlimited = run_plan(one, data_only(data));
  one.run.memory_limit = ByteSize{128 << 10};
  const std::string refused = test::error_message([&] { run_plan(one, data_only(data)); });
  // 4 floats a parameter: the weight, its gradient and Adam's two moments.
  EXPECT_NE(refused.find("run.memory_limit: worker 0 would hold 144.0 KiB to train"), std::string::npos) << refused;
  EXPECT_NE(refused.find("a pipeline (--strategy pipeline)"), std::string::npos) << refused;

  RunPlan split = as_pipeline(one, 2, PipelineSchedule::OneForwardOneBackward);
  test::ScratchDir dir;
  split.run.checkpoint_dir = dir.file("ckpt");
  const RunResult r = run_plan(split, data_only(data));
  expect_same_run(r, unlimited, "split under the limit");
  EXPECT_GT(r.epochs.back().test_accuracy, 0.9);
  const auto memory = std::find_if(r.notes.begin(), r.notes.end(), [](const auto& n) { return n.first == "memory"; });
  ASSERT_NE(memory, r.notes.end());
  EXPECT_NE(memory->second.find("of the limit of 128.0 KiB"), std::string::npos) << memory->second;
  // Stage 0 keeps layers 0-1: 5 floats a parameter (with the step's gradient sum), and its activations.
  EXPECT_GT(r.pipeline[0].state_bytes, 0u);
  EXPECT_EQ(r.pipeline[0].state_bytes, 5 * (704 + 4160) * sizeof(float));

  const CheckpointStore store = CheckpointStore::existing(split.run.checkpoint_dir);
  const FoundCheckpoint found = *store.newest();
  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<std::byte> part = store.read_part(found, rank);
    StateReader in(part, "part");
    in.take_value<uint64_t>("step");
    in.take_value<uint64_t>("batches");
    EXPECT_EQ(in.take_vector<uint64_t>("pipeline.cut"), (std::vector<uint64_t>{0, 2, 4}));
    EXPECT_EQ(in.take_vector<float>("params").size(), rank == 0 ? 704u + 4160 : 4160u + 195) << rank;
  }

  split.run.checkpoint_dir.clear();
  split.run.memory_limit = ByteSize{64 << 10};
  const std::string tight = test::error_message([&] { run_plan(split, data_only(data)); });
  // The balanced stages would hold 95.0 and 85.1 KiB, and no other cut in two holds less than 95.0: the
  // stages' parameters balanced are their state balanced (a cut by time moves to fit, pipeline_split_test).
  EXPECT_NE(tight.find("run.memory_limit: no cut of model mlp's 4 layers into 2 stages keeps every stage's "
                       "parameters, gradients, their sum and optimizer state within 64.0 KiB"),
            std::string::npos)
      << tight;
  EXPECT_NE(tight.find("more stages (strategy.stages)"), std::string::npos) << tight;
}

TEST(Pipeline, TheReportSaysWhatEachStageDid) {
  const LoadedData data = test::small_clusters();
  for (const auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneForwardOneBackward}) {
    const RunResult r = run_plan(as_pipeline(mlp_plan(1, 4), 3, schedule, {1, 3}), data_only(data));
    ASSERT_EQ(r.pipeline.size(), 3u);
    const size_t steps = r.steps;
    // Stage 0 holds layer 0 (10 -> 24), stage 1 layers 1-2 (24 -> 16 -> 8), stage 2 layer 3 (8 -> 3).
    const std::vector<std::pair<uint64_t, uint64_t>> layers{{0, 1}, {1, 3}, {3, 4}};
    const std::vector<uint64_t> parameters{10 * 24 + 24, 24 * 16 + 16 + 16 * 8 + 8, 8 * 3 + 3};
    // Per step each boundary carries the batch's activations forward and their gradients back.
    const std::vector<uint64_t> sent{12 * 24 * 4, 12 * (24 + 8) * 4, 12 * 8 * 4};
    for (size_t s = 0; s < 3; ++s) {
      const PipelineStageStats& st = r.pipeline[s];
      EXPECT_EQ(st.stage, static_cast<int>(s));
      EXPECT_EQ(st.steps, steps);
      EXPECT_EQ(std::make_pair(st.first_layer, st.end_layer), layers[s]);
      EXPECT_EQ(st.parameters, parameters[s]);
      EXPECT_EQ(st.bytes_sent, sent[s] * steps);
      EXPECT_EQ(st.bytes_sent, st.bytes_received);
      EXPECT_EQ(st.micro_batches_in_flight, schedule == PipelineSchedule::GPipe ? 4u : 3 - s);
      EXPECT_GT(st.peak_activation_bytes, 0u);
      EXPECT_GE(st.idle_fraction(), 0.0);
      EXPECT_LE(st.idle_fraction(), 1.0);
    }
    // GPipe holds all four micro-batches' activations, 1F1B three on stage 0.
    EXPECT_EQ(r.pipeline[0].peak_activation_bytes % (schedule == PipelineSchedule::GPipe ? 4 : 3), 0u);
  }
}

TEST(Pipeline, WhatCannotRunIsRefusedSayingWhy) {
  const LoadedData data = test::small_clusters();
  const auto refusal = [&](const RunPlan& plan) {
    return test::error_message([&] { run_plan(plan, data_only(data)); });
  };
  RunPlan shallow = as_pipeline(mlp_plan(1, 2), 3, PipelineSchedule::GPipe);
  shallow.model = MlpOptions{{8}};
  EXPECT_NE(refusal(shallow).find("strategy.stages: 3 stages of model mlp's 2 layers (at most one stage per layer)"),
            std::string::npos)
      << refusal(shallow);
  RunPlan softmax = as_pipeline(mlp_plan(1, 2), 2, PipelineSchedule::GPipe);
  softmax.model = SoftmaxOptions{};
  EXPECT_NE(refusal(softmax).find("model softmax is not a sequence of layers"), std::string::npos)
      << refusal(softmax);
  RunPlan big_micro = as_pipeline(mlp_plan(1, 13), 2, PipelineSchedule::GPipe);
  EXPECT_NE(refusal(big_micro).find("run.microbatches"), std::string::npos) << refusal(big_micro);
  RunPlan one_codec = as_pipeline(mlp_plan(1, 2), 2, PipelineSchedule::GPipe);
  one_codec.codec = Fp16Options{};
  EXPECT_NE(refusal(one_codec).find("codec: one pipeline of 2 stages exchanges no gradients to compress"),
            std::string::npos)
      << refusal(one_codec);
  RunPlan uneven = as_pipeline(mlp_plan(1, 2), 2, PipelineSchedule::GPipe);
  uneven.run.workers = 3;
  EXPECT_NE(refusal(uneven).find("strategy.stages: 2 stages do not divide the 3 workers into whole pipelines"),
            std::string::npos)
      << refusal(uneven);
  RunPlan cut = as_pipeline(mlp_plan(1, 2), 3, PipelineSchedule::GPipe, {2});
  EXPECT_NE(refusal(cut).find("strategy.boundaries: 1 boundaries make 2 stages, not 3"), std::string::npos)
      << refusal(cut);
  RunPlan past = as_pipeline(mlp_plan(1, 2), 2, PipelineSchedule::GPipe, {4});
  EXPECT_NE(refusal(past).find("strategy.boundaries: boundaries 4: each must be a layer index from 1 to 3, increasing"),
            std::string::npos)
      << refusal(past);
}

}  // namespace
}  // namespace ptrain
