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

// Each layer's parameter count, from the whole model's layout.
std::vector<double> parameters_per_layer(const FlatLayout& whole, const std::vector<ModelLayer>& layers) {
  std::vector<double> counts;
  for (const ModelLayer& layer : layers) {
    double parameters = 0;
    for (size_t s = layer.first_segment; s < layer.first_segment + layer.segments; ++s)
      parameters += static_cast<double>(whole.segments()[s].numel);
    counts.push_back(parameters);
  }
  return counts;
}

// A cut read back from a checkpoint, checked against this run's layers and stages.
void check_saved_cut(const std::vector<size_t>& cut, size_t layers, size_t stages) {
  bool fits = cut.size() == stages + 1 && cut.front() == 0 && cut.back() == layers;
  for (size_t s = 0; fits && s < stages; ++s) fits = cut[s] < cut[s + 1];
  if (!fits)
    throw Error(fmt::format("its pipeline cut [{}] is not {} stages of this model's {} layers", fmt::join(cut, ", "),
                            stages, layers));
}

// What a stage holds a parameter in: the parameter, its gradient, their sum
// over the micro-batches, and the optimizer's `slots` arrays.
size_t state_bytes_per_parameter(size_t slots) { return (3 + slots) * sizeof(float); }

constexpr int kProfileRepeats = 3;  // the quickest of them: the first pays for first touches of memory

// The span of the whole model's layout that layers [first, end) hold.
struct ParameterSpan {
  size_t offset = 0, count = 0;
};
ParameterSpan span_of(const FlatLayout& whole, const std::vector<ModelLayer>& layers, size_t first, size_t end) {
  const auto& segments = whole.segments();
  const FlatSegment& from = segments[layers[first].first_segment];
  const FlatSegment& to = segments[layers[end - 1].first_segment + layers[end - 1].segments - 1];
  return {from.offset, to.offset + to.numel - from.offset};
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
  float step(const Batch& batch, const StepInfo& info) override;
  // The first pipeline's stages run the data forward together.
  std::optional<Metrics> evaluate(Model& model, const Dataset& data, int rank) override;
  // The first pipeline's stages send theirs to worker 0.
  std::vector<float> whole_parameters(Model& model, int rank) override;
  std::optional<WorkerMemory> memory() const override {
    return WorkerMemory{stats_.state_bytes, stats_.peak_activation_bytes};  // nothing before the cut
  }
  // The cut, which decides which parameters the worker keeps.
  void save_placement(StateWriter& out) const override;
  void load_placement(StateReader& in) override;
  // Every worker its stage's optimizer (and codecs, with several pipelines).
  void save_state(StateWriter& out) override;
  void load_state(StateReader& in) override;
  CodecStats codec_stats() const override { return reducer_ ? reducer_->codec_stats() : CodecStats{}; }
  void finish() override;
  std::vector<PipelineStageStats> pipeline_stats() const override { return all_stats_; }
  std::vector<std::pair<std::string, std::string>> notes() const override;

 private:
  // The replica keeps its stage's layers alone once placed.
  std::span<float> my_params() { return model_.params(); }
  std::span<float> my_grads() { return model_.grads(); }
  // Everything that depends on where the layers are cut, the replica's
  // layers outside the stage freed first.
  void place(std::vector<size_t> cut);
  // Worker 0 measures its layers on the step's first micro-batch and every worker takes the cut they balance.
  void cut_by_time(const Batch& batch);
  // The user's boundaries, or stages of balanced parameter counts; nothing
  // when the cut waits for the layers' measured times.
  std::optional<std::vector<size_t>> cut_before_training() const;
  // The cut that balances `costs` (one per layer) with every stage within
  // run.memory_limit, its activations `activation_bytes` per layer and
  // micro-batch (empty: not measured); throws no_cut_within_limit() when
  // no cut keeps within it.
  std::vector<size_t> balanced_within_limit(const std::vector<double>& costs,
                                            const std::vector<double>& activation_bytes) const;
  // The same words on every worker, whichever says it first.
  Error no_cut_within_limit(bool with_activations) const;
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
  const FlatLayout whole_layout_;  // the whole model's, as the replica had it before it kept its stage
  uint64_t memory_limit_;
  std::vector<size_t> in_flight_;  // per stage: the most micro-batches whose activations it holds
  std::vector<size_t> cut_;  // the stages' first layers, and the layer count (empty until placed)
  std::vector<LayerCost> layer_costs_;  // worker 0, when it measured them
  ParameterSpan span_;       // this stage's parameters, in the whole layout
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
      whole_layout_(model.layout()),
      memory_limit_(config.memory_limit),
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
  for (size_t s = 0; s < static_cast<size_t>(stages_); ++s)
    in_flight_.push_back(
        micro_batches_in_flight(pipeline_passes(options.schedule, s, static_cast<size_t>(stages_), microbatches_)));
  passes_ = pipeline_passes(options.schedule, static_cast<size_t>(stage_), static_cast<size_t>(stages_), microbatches_);
  out_shapes_.resize(microbatches_);
  stats_.stage = stage_, stats_.group = group_;
  stats_.micro_batches_in_flight = micro_batches_in_flight(passes_);
  if (auto cut = cut_before_training()) place(std::move(*cut));
}

std::optional<std::vector<size_t>> PipelineStageWorker::cut_before_training() const {
  if (!options_.boundaries.empty()) {
    try {
      return cut_at(options_.boundaries, layers_.size(), static_cast<size_t>(stages_));
    } catch (const Error& e) {
      throw Error(fmt::format("strategy.boundaries: {}", e.what()));
    }
  }
  if (options_.balance == PipelineBalance::Time) return std::nullopt;
  return balanced_within_limit(parameters_per_layer(whole_layout_, layers_), {});
}

std::vector<size_t> PipelineStageWorker::balanced_within_limit(const std::vector<double>& costs,
                                                               const std::vector<double>& activation_bytes) const {
  StageFits fits;
  if (memory_limit_ > 0) {
    // A stage's parameters, gradients, their sum over the micro-batches and the optimizer's state.
    const auto per_parameter =
        static_cast<double>(state_bytes_per_parameter(make_optimizer(optimizer_config_, 0)->state_slots()));
    fits = [this, &activation_bytes, per_parameter, parameters = parameters_per_layer(whole_layout_, layers_)](
               size_t stage, size_t first, size_t end) {
      double bytes = 0;
      for (size_t l = first; l < end; ++l)
        bytes += per_parameter * parameters[l] +
                 (activation_bytes.empty() ? 0.0 : activation_bytes[l] * static_cast<double>(in_flight_[stage]));
      return bytes <= static_cast<double>(memory_limit_);
    };
  }
  std::vector<size_t> cut = balanced_cut(costs, static_cast<size_t>(stages_), fits);
  if (cut.empty()) throw no_cut_within_limit(!activation_bytes.empty());
  return cut;
}

Error PipelineStageWorker::no_cut_within_limit(bool with_activations) const {
  return Error(fmt::format("run.memory_limit: no cut of model {}'s {} layers into {} stages keeps every stage's "
                           "parameters, gradients, their sum and optimizer state{} within {}; more stages "
                           "(strategy.stages) would hold less",
                           model_.name(), layers_.size(), stages_, with_activations ? " and activations" : "",
                           size_text(static_cast<double>(memory_limit_))));
}

void PipelineStageWorker::place(std::vector<size_t> cut) {
  cut_ = std::move(cut);
  const size_t first = cut_[static_cast<size_t>(stage_)], end = cut_[static_cast<size_t>(stage_) + 1];
  span_ = span_of(whole_layout_, layers_, first, end);
  // Every replica starts from the same seed, so each stage keeps the initial
  // values the whole model has (a resumed run then loads its own).
  if (!model_.keep_layers(first, end) || model_.params().size() != span_.count)
    throw Error(fmt::format("model {}: cannot keep layers [{}, {}) alone as a pipeline stage", model_.name(), first,
                            end));
  model_stage_ = model_.stage(first, end);
  if (!model_stage_)
    throw Error(fmt::format("model {}: cannot run layers [{}, {}) as a stage", model_.name(), first, end));
  optimizer_ = make_optimizer(optimizer_config_, span_.count);
  if (holders_) {
    stage_layout_ = model_.layout();
    reducer_ = std::make_unique<GradientReducer>(*holders_, options_.allreduce, my_grads(), stage_layout_,
                                                 options_.bucket_size.bytes, /*overlap=*/false, codec_);
  }
  earlier_.assign(span_.count, 0.0f);
  stats_.first_layer = first, stats_.end_layer = end;
  stats_.parameters = span_.count;
  stats_.state_bytes = state_bytes_per_parameter(optimizer_->state_slots()) * span_.count;
}

void PipelineStageWorker::cut_by_time(const Batch& batch) {
  std::vector<uint64_t> cut(static_cast<size_t>(stages_) + 1);  // all 0: worker 0 found none within the limit
  if (comm_.rank() == 0) {
    const MicrobatchRows rows = microbatch_rows(batch.size(), microbatches_, 0);
    batch.slice_into(rows.begin, rows.end, micro_);
    layer_costs_ = measure_layers(model_, layers_.size(), micro_, kProfileRepeats);
    std::vector<double> seconds, activations;
    for (const LayerCost& c : layer_costs_)
      seconds.push_back(c.seconds), activations.push_back(static_cast<double>(c.activation_bytes));
    try {
      const std::vector<size_t> balanced = balanced_within_limit(seconds, activations);
      std::copy(balanced.begin(), balanced.end(), cut.begin());
    } catch (const Error&) {  // every worker says so below, once it has the news
    }
  }
  comm_.broadcast(std::as_writable_bytes(std::span<uint64_t>(cut)), 0);
  if (cut.back() == 0) throw no_cut_within_limit(true);
  place({cut.begin(), cut.end()});
}

float PipelineStageWorker::step(const Batch& batch, const StepInfo& info) {
  if (batch.size() < microbatches_)
    throw Error(fmt::format("a batch of {} sample(s) cannot be split into {} micro-batches", batch.size(),
                            microbatches_));
  if (cut_.empty()) cut_by_time(batch);  // a cut by measured times is made at the first step, on its batch
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

void PipelineStageWorker::save_placement(StateWriter& out) const {
  const std::vector<uint64_t> cut(cut_.begin(), cut_.end());
  out.put("pipeline.cut", cut);
}

// The cut the run was placed by, measured or not, goes on with it: a cut by
// measured times is placed here, one made before training must be the same.
void PipelineStageWorker::load_placement(StateReader& in) {
  const std::vector<uint64_t> saved = in.take_vector<uint64_t>("pipeline.cut");
  if (saved.empty()) return;  // no step yet: the replica is whole
  std::vector<size_t> cut(saved.begin(), saved.end());
  try {
    check_saved_cut(cut, layers_.size(), static_cast<size_t>(stages_));
    if (!cut_.empty() && cut != cut_)
      throw Error(fmt::format("its pipeline cut [{}] is not this run's [{}] (the same --boundaries and --balance "
                              "resume it)",
                              fmt::join(cut, ", "), fmt::join(cut_, ", ")));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", in.source(), e.what()));
  }
  if (cut_.empty()) place(std::move(cut));
}

void PipelineStageWorker::save_state(StateWriter& out) {
  if (cut_.empty()) return;  // no step yet: nothing the optimizer holds
  optimizer_->save_state(out);
  if (reducer_) reducer_->save_state(out);
}

void PipelineStageWorker::load_state(StateReader& in) {
  if (cut_.empty()) return;
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

std::optional<Metrics> PipelineStageWorker::evaluate(Model& model, const Dataset& data, int rank) {
  if (cut_.empty()) return WorkerStrategy::evaluate(model, data, rank);  // not placed: every replica is whole
  if (group_ != 0) return std::nullopt;
  // Links of its own: what evaluation sends is not counted as the steps'.
  PipelineLinks links(comm_, stage_ > 0 ? comm_.rank() - 1 : -1, stage_ + 1 < stages_ ? comm_.rank() + 1 : -1);
  const size_t chunk = evaluation_chunk(data);
  const bool reads_data = stage_ == 0 || stage_ + 1 == stages_;  // the features, the targets
  EvaluationSums sums;
  Batch batch;
  std::vector<size_t> indices;
  Activations in, out;
  for (size_t start = 0; start < data.size(); start += chunk) {
    const size_t n = std::min(chunk, data.size() - start);
    if (reads_data) {
      indices.resize(n);
      for (size_t i = 0; i < n; ++i) indices[i] = start + i;
      batch.gather(data, indices);
    }
    if (stage_ > 0) links.receive_forward(n, in);
    model_stage_->infer(batch, in, out, sums);
    if (stage_ + 1 < stages_) links.send_forward(out);
  }
  std::array<double, 2> sent{sums.loss, static_cast<double>(sums.correct)};
  if (stages_ > 1 && stage_ + 1 == stages_) {
    comm_.send(0, kTagPipelineEvaluation, std::as_bytes(std::span<const double>(sent)));
    return std::nullopt;
  }
  if (comm_.rank() != 0) return std::nullopt;
  if (stages_ > 1) comm_.recv(stages_ - 1, kTagPipelineEvaluation, std::as_writable_bytes(std::span<double>(sent)));
  return Metrics::from_sums(sent[0], static_cast<size_t>(sent[1]), data.size(), data.size() * data.label_numel());
}

// Worker 0 gathers the whole model a stage at a time, each straight into its place.
std::vector<float> PipelineStageWorker::whole_parameters(Model& model, int rank) {
  if (cut_.empty()) return WorkerStrategy::whole_parameters(model, rank);
  if (group_ != 0) return {};
  if (stage_ > 0) {
    comm_.send(0, kTagPipelineModel, std::as_bytes(my_params()));
    return {};
  }
  std::vector<float> whole(whole_layout_.total());
  for (int s = 0; s < stages_; ++s) {
    const auto at = static_cast<size_t>(s);
    const ParameterSpan span = span_of(whole_layout_, layers_, cut_[at], cut_[at + 1]);
    const std::span<float> into = std::span<float>(whole).subspan(span.offset, span.count);
    if (s == 0)
      std::copy(my_params().begin(), my_params().end(), into.begin());
    else
      comm_.recv(s, kTagPipelineModel, std::as_writable_bytes(into));
  }
  return whole;
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
      layers.push_back(fmt::format("{:.2f} ms ({})", c.seconds * 1e3, size_text(static_cast<double>(c.activation_bytes))));
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
                    size_text(static_cast<double>(s.bytes_sent / s.steps)),
                    size_text(static_cast<double>(s.bytes_received / s.steps)),
                    size_text(static_cast<double>(s.peak_activation_bytes)), s.micro_batches_in_flight));
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
