#include "sync/hybrid_allreduce.hpp"

#include <fmt/format.h>

#include <cstddef>

#include "core/stopwatch.hpp"
#include "core/timeline.hpp"

namespace ptrain {

std::unique_ptr<StrategyGroup> HybridOptions::make_group(const StrategyConfig& config, size_t, int) const {
  return std::make_unique<HybridGroup>(*this, config);
}

HybridAllreduce::HybridAllreduce(Model& model, Communicator& comm, const HybridOptions& options,
                                 const StrategyConfig& config)
    : model_(model),
      comm_(comm),
      options_(options),
      optimizer_config_(config.optimizer),
      optimizer_(make_optimizer(config.optimizer, model.params().size())) {
  // Overlap needs the model to say when each gradient is final; otherwise the
  // buckets go after backward.
  overlapping_ = options.overlap && model_.set_gradient_ready_hook(
                                        [this](size_t segment) { reducer_->segment_ready(segment); });
  try {
    reducer_ = std::make_unique<GradientReducer>(comm_, options.allreduce, model_.grads(), model_.layout(),
                                                 options.bucket_size.bytes, overlapping_, config.codec);
  } catch (...) {
    model_.set_gradient_ready_hook({});  // the model outlives this half-built strategy
    throw;
  }
  if (overlapping_ && !reducer_->overlapping()) {  // one bucket: nothing to start during backward
    model_.set_gradient_ready_hook({});
    overlapping_ = false;
  }
}

HybridAllreduce::~HybridAllreduce() { model_.set_gradient_ready_hook({}); }

void HybridAllreduce::start() {
  // Replicas start from rank 0's weights, whatever each was initialised with.
  auto params = model_.params();
  comm_.broadcast(std::as_writable_bytes(params), 0);
}

float HybridAllreduce::step(const Batch& batch, const StepInfo& info) {
  Stopwatch clock;
  reducer_->begin_step(info);
  optimizer_->set_lr(lr_at(optimizer_config_, info.epoch));
  const float loss = model_.forward_backward(batch);
  phases_.compute += clock.seconds();
  clock.reset();
  // Each bucket's parameters are updated as soon as it holds the mean
  // gradient, while the communication thread all-reduces the next ones.
  const auto params = model_.params();
  const auto grads = model_.grads();
  double optimizer = 0;
  reducer_->finish_step([&](const GradientBucket& bucket) {
    Stopwatch updating;
    TimelineSpan span("optimizer", "offset", static_cast<int64_t>(bucket.offset));
    optimizer_->step_slice(bucket.offset, params.subspan(bucket.offset, bucket.count),
                           grads.subspan(bucket.offset, bucket.count));
    const double seconds = updating.seconds();
    optimizer += seconds;
    if (overlapping_ && bucket.offset != 0) phases_.optimizer_beside_exchange += seconds;  // not the last bucket
  });
  optimizer_->end_step();
  phases_.exchange += clock.seconds() - optimizer;
  phases_.optimizer += optimizer;
  ++phases_.steps;
  return loss;
}

std::vector<std::pair<std::string, std::string>> HybridAllreduce::notes() const {
  std::vector<std::pair<std::string, std::string>> notes{
      {"all-reduce", fmt::format("{} in {} bucket(s) of at most {}, overlap with backward {}",
                                 enum_name(options_.allreduce), reducer_->bucket_count(),
                                 human_bytes(options_.bucket_size.bytes), overlapping_ ? "on" : "off")}};
  if (phases_.steps > 0) {
    const double ms = 1e3 / static_cast<double>(phases_.steps);
    const std::string beside =
        overlapping_ ? fmt::format(" ({:.1f} ms of it beside later buckets' all-reduce)",
                                   phases_.optimizer_beside_exchange * ms)
                     : "";
    notes.emplace_back("step phases",
                       fmt::format("forward+backward {:.1f} ms, then all-reduce wait {:.1f} ms, optimizer {:.1f} "
                                   "ms{}; mean of {} steps",
                                   phases_.compute * ms, phases_.exchange * ms, phases_.optimizer * ms, beside,
                                   phases_.steps));
  }
  return notes;
}

}  // namespace ptrain
