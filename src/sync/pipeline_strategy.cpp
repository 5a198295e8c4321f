#include "sync/pipeline_strategy.hpp"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "comm/allgather_values.hpp"
#include "comm/message_tags.hpp"
#include "comm/subgroup_communicator.hpp"
#include "core/error.hpp"
#include "core/memory_size.hpp"
#include "core/microbatch_sum.hpp"
#include "core/stopwatch.hpp"
#include "core/timeline.hpp"
#include "sync/gradient_reducer.hpp"
#include "sync/pipeline_links.hpp"
#include "sync/pipeline_profile.hpp"
#include "sync/pipeline_split.hpp"

namespace ptrain {

namespace {

void check_stage_count(const Model& model, const std::vector<ModelLayer>& layers, size_t stages) {
  if (stages > layers.size())
    throw Error(fmt::format("strategy.stages: {} stages of model {}'s {} layers (at most one stage per layer)", stages,
                            model.name(), layers.size()));
}

// Where a model's layers are cut for `stages` stages before any step: the
// user's boundaries, or stages of balanced parameter counts; nothing when
// the cut waits for the layers' measured times.
std::optional<std::vector<size_t>> cut_before_training(const PipelineOptions& options, Model& model,
                                                       const std::vector<ModelLayer>& layers, size_t stages) {
  if (!options.boundaries.empty()) {
    try {
      return cut_at(options.boundaries, layers.size(), stages);
    } catch (const Error& e) {
      throw Error(fmt::format("strategy.boundaries: {}", e.what()));
    }
  }
  if (options.balance == PipelineBalance::Time) return std::nullopt;
  const auto& segments = model.layout().segments();
  std::vector<double> costs;
  for (const ModelLayer& layer : layers) {
    double parameters = 0;
    for (size_t s = layer.first_segment; s < layer.first_segment + layer.segments; ++s)
      parameters += static_cast<double>(segments[s].numel);
    costs.push_back(parameters);
  }
  return balanced_cut(costs, stages);
}

// A cut read back from a checkpoint, checked against this run's layers and stages.
void check_saved_cut(const std::vector<size_t>& cut, size_t layers, size_t stages) {
  bool fits = cut.size() == stages + 1 && cut.front() == 0 && cut.back() == layers;
  for (size_t s = 0; fits && s < stages; ++s) fits = cut[s] < cut[s + 1];
  if (!fits)
    throw Error(fmt::format("its pipeline cut [{}] is not {} stages of this model's {} layers", fmt::join(cut, ", "),
                            stages, layers));
}

constexpr int kProfileRepeats = 3;  // the quickest of them: the first pays for first touches of memory

// The span of the layout that layers [first, end) hold.
struct ParameterSpan {
  size_t offset = 0, count = 0;
};
ParameterSpan span_of(const Model& model, const std::vector<ModelLayer>& layers, size_t first, size_t end) {
  const auto& segments = model.layout().segments();
  const FlatSegment& from = segments[layers[first].first_segment];
  const FlatSegment& to = segments[layers[end - 1].first_segment + layers[end - 1].segments - 1];
  return {from.offset, to.offset + to.numel - from.offset};
}

// The layout of layers [first, end) alone, from offset 0.
FlatLayout layout_of(const Model& model, const std::vector<ModelLayer>& layers, size_t first, size_t end) {
  FlatLayout out;
  const auto& segments = model.layout().segments();
  for (size_t s = layers[first].first_segment; s < layers[end - 1].first_segment + layers[end - 1].segments; ++s)
    out.add(segments[s].name, segments[s].shape);
  return out;
}

// The workers that hold stage `stage` in each of the pipelines, in pipeline order.
std::vector<int> holders_of(int stage, int stages, int workers) {
  std::vector<int> ranks;
  for (int r = stage; r < workers; r += stages) ranks.push_back(r);
  return ranks;
}

class PipelineStageWorker : public WorkerStrategy {
 public:
  PipelineStageWorker(Model& model, Communicator& comm, const PipelineOptions& options, const StrategyConfig& config,
                      int workers);
  void start() override;
  float step(const Batch& batch, const StepInfo& info) override;
  void gather_model() override;
  // Every worker its stage's optimizer (and codecs, with several pipelines).
  void save_state(StateWriter& out) override;
  void load_state(StateReader& in) override;
  CodecStats codec_stats() const override { return reducer_ ? reducer_->codec_stats() : CodecStats{}; }
  void finish() override;
  std::vector<PipelineStageStats> pipeline_stats() const override { return all_stats_; }
  std::vector<std::pair<std::string, std::string>> notes() const override;

 private:
  // The parameters stage `s` holds, in this worker's copy of the model.
  std::span<float> stage_params(size_t s) {
    const ParameterSpan span = span_of(model_, layers_, cut_[s], cut_[s + 1]);
    return model_.params().subspan(span.offset, span.count);
  }
  std::span<float> my_params() { return model_.params().subspan(span_.offset, span_.count); }
  std::span<float> my_grads() { return model_.grads().subspan(span_.offset, span_.count); }
  // Everything that depends on where the layers are cut.
  void place(std::vector<size_t> cut);
  // Worker 0 measures its layers on the step's first micro-batch and every worker takes the cut they balance.
  void cut_by_time(const Batch& batch);
  // Every stage from worker 0's parameters.
  void hand_out_parameters();
  void run_passes(const Batch& batch, double& loss);
  void forward(const PipelinePass& pass, const PipelinePass* next, const Batch& batch, double& loss);
  void backward(const PipelinePass& pass, const PipelinePass* next, size_t rows);
  float share_loss(double loss);
  void update(const StepInfo& info);

  Model& model_;
  Communicator& comm_;
  const PipelineOptions options_;
  OptimizerConfig optimizer_config_;
  CodecConfig codec_;
  size_t microbatches_;
  int stages_, stage_, group_;
  std::vector<ModelLayer> layers_;
  std::vector<size_t> cut_;  // the stages' first layers, and the layer count (empty until placed)
  std::vector<LayerCost> layer_costs_;  // worker 0, when it measured them
  ParameterSpan span_;       // this stage's parameters
  std::unique_ptr<ModelStage> model_stage_;
  std::unique_ptr<Optimizer> optimizer_;
  FlatLayout stage_layout_;
  std::unique_ptr<SubgroupCommunicator> holders_;  // with several pipelines: this stage's holders
  std::unique_ptr<GradientReducer> reducer_;       // which average its gradient
  std::vector<PipelinePass> passes_;
  PipelineLinks links_;
  std::vector<float> earlier_;  // the weighted sum of this step's earlier micro-batches' gradients
  Batch micro_;
  Activations in_, out_, grad_out_, grad_in_;
  bool in_ready_ = false, grad_out_ready_ = false;  // received with the previous pass's send
  std::vector<std::vector<int64_t>> out_shapes_;    // per micro-batch in flight: what its gradient's shape is
  PipelineStageStats stats_;
  std::vector<PipelineStageStats> all_stats_;  // worker 0, after finish()
};

PipelineStageWorker::PipelineStageWorker(Model& model, Communicator& comm, const PipelineOptions& options,
                                         const StrategyConfig& config, int workers)
    : model_(model),
      comm_(comm),
      options_(options),
      optimizer_config_(config.optimizer),
      codec_(config.codec),
      microbatches_(std::max<size_t>(config.microbatches, 1)),
      stages_(options.stages_of(workers)),
      stage_(comm.rank() % stages_),
      group_(comm.rank() / stages_),
      links_(comm, stage_ > 0 ? comm.rank() - 1 : -1, stage_ + 1 < stages_ ? comm.rank() + 1 : -1) {
  if (stages_ < 1 || comm.size() % stages_ != 0)  // the plan says so first; a library caller may not ask it
    throw Error(fmt::format("strategy.stages: {} stages do not divide the {} workers into whole pipelines", stages_,
                            comm.size()));
  std::string why_not;
  layers_ = model.layers(why_not);
  if (layers_.empty()) throw Error(why_not);
  check_stage_count(model, layers_, static_cast<size_t>(stages_));
  if (comm.size() > stages_)
    holders_ = std::make_unique<SubgroupCommunicator>(comm, holders_of(stage_, stages_, comm.size()));
  passes_ = pipeline_passes(options.schedule, static_cast<size_t>(stage_), static_cast<size_t>(stages_), microbatches_);
  out_shapes_.resize(microbatches_);
  stats_.stage = stage_, stats_.group = group_;
  stats_.micro_batches_in_flight = micro_batches_in_flight(passes_);
  if (auto cut = cut_before_training(options, model, layers_, static_cast<size_t>(stages_))) place(std::move(*cut));
}

void PipelineStageWorker::place(std::vector<size_t> cut) {
  cut_ = std::move(cut);
  const size_t first = cut_[static_cast<size_t>(stage_)], end = cut_[static_cast<size_t>(stage_) + 1];
  span_ = span_of(model_, layers_, first, end);
  model_stage_ = model_.stage(first, end);
  if (!model_stage_)
    throw Error(fmt::format("model {}: cannot run layers [{}, {}) as a stage", model_.name(), first, end));
  optimizer_ = make_optimizer(optimizer_config_, span_.count);
  if (holders_) {
    stage_layout_ = layout_of(model_, layers_, first, end);
    reducer_ = std::make_unique<GradientReducer>(*holders_, options_.allreduce, my_grads(), stage_layout_,
                                                 options_.bucket_size.bytes, /*overlap=*/false, codec_);
  }
  earlier_.assign(span_.count, 0.0f);
  stats_.first_layer = first, stats_.end_layer = end;
  stats_.parameters = span_.count;
  stats_.state_bytes = (3 + optimizer_->state_slots()) * span_.count * sizeof(float);
}

void PipelineStageWorker::cut_by_time(const Batch& batch) {
  std::vector<uint64_t> cut(static_cast<size_t>(stages_) + 1);
  if (comm_.rank() == 0) {
    const MicrobatchRows rows = microbatch_rows(batch.size(), microbatches_, 0);
    batch.slice_into(rows.begin, rows.end, micro_);
    layer_costs_ = measure_layers(model_, layers_.size(), micro_, kProfileRepeats);
    std::vector<double> seconds;
    for (const LayerCost& c : layer_costs_) seconds.push_back(c.seconds);
    const std::vector<size_t> balanced = balanced_cut(seconds, static_cast<size_t>(stages_));
    std::copy(balanced.begin(), balanced.end(), cut.begin());
  }
  comm_.broadcast(std::as_writable_bytes(std::span<uint64_t>(cut)), 0);
  place({cut.begin(), cut.end()});
}

// Every stage starts from worker 0's parameters (its own after a resume:
// worker 0's checkpoint part holds the whole model).
void PipelineStageWorker::hand_out_parameters() {
  if (comm_.rank() == 0) {
    for (int r = 1; r < comm_.size(); ++r)
      comm_.send(r, kTagPipelineModel, std::as_bytes(stage_params(static_cast<size_t>(r % stages_))));
  } else {
    comm_.recv(0, kTagPipelineModel, std::as_writable_bytes(my_params()));
  }
}

// A cut that waits for measured times is made at the first step, on its batch.
void PipelineStageWorker::start() {
  if (!cut_.empty()) hand_out_parameters();
}

float PipelineStageWorker::step(const Batch& batch, const StepInfo& info) {
  if (batch.size() < microbatches_)
    throw Error(fmt::format("a batch of {} sample(s) cannot be split into {} micro-batches", batch.size(),
                            microbatches_));
  if (cut_.empty()) {
    cut_by_time(batch);
    hand_out_parameters();
  }
  const double idle_before = links_.idle_seconds();
  Stopwatch clock;
  optimizer_->set_lr(lr_at(optimizer_config_, info.epoch));
  std::fill(earlier_.begin(), earlier_.end(), 0.0f);
  double loss = 0;
  try {
    run_passes(batch, loss);
  } catch (...) {
    model_stage_->clear();
    in_ready_ = grad_out_ready_ = false;
    throw;
  }
  const double passes = clock.seconds(), waited = links_.idle_seconds() - idle_before;
  stats_.compute_seconds += passes - waited;
  clock.reset();
  const float shared = share_loss(loss);
  stats_.idle_seconds += waited + clock.seconds();
  update(info);
  ++stats_.steps;
  return shared;
}

// The stage's parameters from its gradient: this pipeline's, or with
// several the mean of every pipeline's, bucket by bucket as each arrives.
void PipelineStageWorker::update(const StepInfo& info) {
  Stopwatch clock;
  if (!reducer_) {
    TimelineSpan span("optimizer");
    optimizer_->step(my_params(), my_grads());
    stats_.optimizer_seconds += clock.seconds();
    return;
  }
  double updating = 0;
  const uint64_t sent_before = comm_.stats().bytes_sent;
  reducer_->begin_step(info);
  reducer_->finish_step([&](const GradientBucket& bucket) {
    Stopwatch bucket_clock;
    TimelineSpan span("optimizer", "offset", static_cast<int64_t>(bucket.offset));
    optimizer_->step_slice(bucket.offset, my_params().subspan(bucket.offset, bucket.count),
                           my_grads().subspan(bucket.offset, bucket.count));
    updating += bucket_clock.seconds();
  });
  optimizer_->end_step();
  stats_.optimizer_seconds += updating;
  stats_.allreduce_seconds += clock.seconds() - updating;
  stats_.allreduce_bytes_sent += comm_.stats().bytes_sent - sent_before;
}

void PipelineStageWorker::save_state(StateWriter& out) {
  const std::vector<uint64_t> cut(cut_.begin(), cut_.end());
  out.put("pipeline.cut", cut);
  if (cut_.empty()) return;  // no step yet: nothing the optimizer holds
  optimizer_->save_state(out);
  if (reducer_) reducer_->save_state(out);
}

// The cut the run was placed by, measured or not, goes on with it.
void PipelineStageWorker::load_state(StateReader& in) {
  const std::vector<uint64_t> saved = in.take_vector<uint64_t>("pipeline.cut");
  if (saved.empty()) return;
  std::vector<size_t> cut(saved.begin(), saved.end());
  try {
    check_saved_cut(cut, layers_.size(), static_cast<size_t>(stages_));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", in.source(), e.what()));
  }
  if (cut != cut_) place(std::move(cut));
  optimizer_->load_state(in);
  if (reducer_) reducer_->load_state(in);
}

void PipelineStageWorker::run_passes(const Batch& batch, double& loss) {
  for (size_t i = 0; i < passes_.size(); ++i) {
    const PipelinePass* next = i + 1 < passes_.size() ? &passes_[i + 1] : nullptr;
    const PipelinePass& pass = passes_[i];
    if (pass.forward)
      forward(pass, next, batch, loss);
    else
      backward(pass, next, batch.size());
    stats_.peak_activation_bytes = std::max<uint64_t>(stats_.peak_activation_bytes, model_stage_->held_bytes());
  }
}

void PipelineStageWorker::forward(const PipelinePass& pass, const PipelinePass* next, const Batch& batch,
                                  double& loss) {
  const size_t n = batch.size();
  const MicrobatchRows rows = microbatch_rows(n, microbatches_, pass.micro);
  batch.slice_into(rows.begin, rows.end, micro_);
  if (stage_ > 0 && !in_ready_) links_.receive_forward(rows.end - rows.begin, in_);
  in_ready_ = false;
  const float part = model_stage_->forward(pass.micro, micro_, in_, out_);
  if (stage_ + 1 == stages_) {
    loss += static_cast<double>(rows.share(n)) * part;
    return;
  }
  out_shapes_[pass.micro] = out_.shape;
  if (next && !next->forward) {  // its gradient comes back for the backward pass that follows
    links_.send_forward_receive_backward(out_, out_shapes_[next->micro], grad_out_);
    grad_out_ready_ = true;
  } else {
    links_.send_forward(out_);
  }
}

void PipelineStageWorker::backward(const PipelinePass& pass, const PipelinePass* next, size_t n) {
  if (stage_ + 1 < stages_ && !grad_out_ready_) links_.receive_backward(out_shapes_[pass.micro], grad_out_);
  grad_out_ready_ = false;
  model_stage_->backward(pass.micro, grad_out_, grad_in_);
  const float share = microbatch_rows(n, microbatches_, pass.micro).share(n);
  if (pass.micro + 1 < microbatches_)
    add_microbatch(earlier_, share, my_grads());
  else
    fold_last_microbatch(my_grads(), share, earlier_);
  if (stage_ == 0) return;
  if (next && next->forward) {  // the next forward's activations come in as this gradient goes out
    const MicrobatchRows rows = microbatch_rows(n, microbatches_, next->micro);
    links_.send_backward_receive_forward(grad_in_, rows.end - rows.begin, in_);
    in_ready_ = true;
  } else {
    links_.send_backward(grad_in_);
  }
}

// The last stage's loss of the step, to every stage of its pipeline.
float PipelineStageWorker::share_loss(double loss) {
  float value = static_cast<float>(loss);
  const int last = group_ * stages_ + stages_ - 1;
  if (comm_.rank() == last) {
    for (int s = 0; s + 1 < stages_; ++s)
      comm_.send(group_ * stages_ + s, kTagPipelineLoss, std::as_bytes(std::span<const float>(&value, 1)));
  } else {
    comm_.recv(last, kTagPipelineLoss, std::as_writable_bytes(std::span<float>(&value, 1)));
  }
  return value;
}

// The stages of the first pipeline send their parameters to worker 0.
void PipelineStageWorker::gather_model() {
  if (group_ != 0 || cut_.empty()) return;  // before the first step worker 0 holds the whole model anyway
  if (stage_ > 0) {
    comm_.send(0, kTagPipelineModel, std::as_bytes(my_params()));
    return;
  }
  for (int s = 1; s < stages_; ++s)
    comm_.recv(s, kTagPipelineModel, std::as_writable_bytes(stage_params(static_cast<size_t>(s))));
}

void PipelineStageWorker::finish() {
  PipelineStageStats mine = stats_;
  mine.bytes_sent = links_.bytes_sent(), mine.bytes_received = links_.bytes_received();
  all_stats_ = allgather_value(comm_, mine);
}

std::vector<std::pair<std::string, std::string>> PipelineStageWorker::notes() const {
  std::vector<std::pair<std::string, std::string>> notes{
      {"pipeline", fmt::format("{} stages x {} pipeline(s), {} micro-batches a step, {}", stages_,
                               comm_.size() / stages_, microbatches_, enum_name(options_.schedule))}};
  if (!layer_costs_.empty()) {  // worker 0 measured the layers for the cut
    std::vector<std::string> layers;
    for (const LayerCost& c : layer_costs_)
      layers.push_back(fmt::format("{:.2f} ms ({})", c.seconds * 1e3, human_bytes(c.activation_bytes)));
    notes.emplace_back("cut", fmt::format("by time, layers' forward and backward on a micro-batch (activations "
                                          "held): {}",
                                          fmt::join(layers, ", ")));
  }
  for (const PipelineStageStats& s : all_stats_) {
    if (s.group != 0 || s.steps == 0) continue;
    const double per_step = 1e3 / static_cast<double>(s.steps);
    notes.emplace_back(
        fmt::format("stage {}", s.stage),
        fmt::format("{} ({} parameters): compute {:.1f} ms, idle {:.1f} ms ({:.0f}% bubble), all-reduce {:.1f} "
                    "ms, optimizer {:.1f} ms a step; {} sent and {} received a step; activations held at most {} ({} "
                    "micro-batches)",
                    s.end_layer - s.first_layer == 1 ? fmt::format("layer {}", s.first_layer)
                                                     : fmt::format("layers {}-{}", s.first_layer, s.end_layer - 1),
                    s.parameters, s.compute_seconds * per_step,
                    s.idle_seconds * per_step, 100 * s.idle_fraction(), s.allreduce_seconds * per_step,
                    s.optimizer_seconds * per_step,
                    human_bytes(s.bytes_sent / s.steps), human_bytes(s.bytes_received / s.steps),
                    human_bytes(s.peak_activation_bytes), s.micro_batches_in_flight));
  }
  return notes;
}

}  // namespace

void PipelineOptions::check(int workers, const std::string& prefix, Problems& problems) const {
  if (stages > workers)
    problems.add(prefix + "stages", fmt::format(": {} stages need as many workers (run.workers is {})", stages, workers));
  else if (workers % stages_of(workers) != 0)
    problems.add(prefix + "stages",
                 fmt::format(": {} stages do not divide the {} workers into whole pipelines", stages, workers));
  if (!boundaries.empty() && boundaries.size() + 1 != static_cast<size_t>(stages_of(workers)))
    problems.add(prefix + "boundaries",
                 fmt::format(": {} boundaries make {} stages, not {}", boundaries.size(), boundaries.size() + 1,
                             stages_of(workers)));
}

std::unique_ptr<StrategyGroup> PipelineOptions::make_group(const StrategyConfig& config, size_t, int workers) const {
  return std::make_unique<PipelineGroup>(*this, config, workers);
}

std::unique_ptr<WorkerStrategy> PipelineGroup::for_worker(Model& model, Communicator& comm) {
  return std::make_unique<PipelineStageWorker>(model, comm, options_, config_, workers_);
}

}  // namespace ptrain
