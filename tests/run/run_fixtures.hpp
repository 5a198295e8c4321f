#pragma once
// What the tests of run() share: a small data set and a plan on the native
// model (so they run in the sanitizer builds too).
#include <atomic>
#include <memory>

#include "core/error.hpp"
#include "data/synthetic.hpp"
#include "layered_test_model.hpp"
#include "plan/strategy_registry.hpp"
#include "run/run.hpp"

namespace ptrain::test {

inline RunInputs data_only(LoadedData data) {
  RunInputs inputs;
  inputs.data = std::move(data);
  return inputs;
}

// The data, and for a pipeline a model of as many layers as it has stages
// (the plan's softmax model is one layer, which no pipeline splits).
inline RunInputs inputs_for(const RunPlan& plan, LoadedData data) {
  RunInputs inputs = data_only(std::move(data));
  if (const int stages = pipeline_stages_of(plan.strategy, plan.run.workers); stages > 0)
    inputs.model = layered_model(std::vector<size_t>(static_cast<size_t>(stages - 1), 8));
  return inputs;
}

// Gaussian clusters: the first `train` of `total` samples train, all of them test.
inline LoadedData clusters(size_t total, size_t train, size_t features, int classes, uint64_t seed) {
  const Dataset all = make_gaussian_clusters(total, features, classes, seed, 1.5f);
  return {all.head(train), all};
}

// The 900-sample set (720 train) the resume and divergence tests share.
inline LoadedData small_clusters() { return clusters(900, 720, 10, 3, 5); }

// Softmax regression on unstandardised features, threads not placed.
inline RunPlan softmax_plan(int workers, size_t batch, double epochs) {
  RunPlan plan;
  plan.model = SoftmaxOptions{};
  plan.data_controls.standardize = false;
  plan.run.workers = workers;
  plan.run.batch = batch;
  plan.run.epochs = epochs;
  plan.run.placement = Placement::None;
  plan.run.comm_timeout = 30;
  return plan;
}

// A replica that throws Error("killed for the test") at its gradient
// `fail_at` (1-based), once: the first replica to get there while `armed`
// disarms it, so a restarted run goes on.
class FailingModel : public Model {
 public:
  FailingModel(std::unique_ptr<Model> inner, size_t fail_at, std::atomic<bool>* armed)
      : inner_(std::move(inner)), fail_at_(fail_at), armed_(armed) {}
  std::string name() const override { return inner_->name(); }
  const FlatLayout& layout() const override { return inner_->layout(); }
  std::span<float> params() override { return inner_->params(); }
  std::span<float> grads() override { return inner_->grads(); }
  float forward_backward(const Batch& batch) override {
    if (++calls_ == fail_at_ && armed_->exchange(false)) throw Error("killed for the test");
    return inner_->forward_backward(batch);
  }
  Metrics evaluate(const Dataset& data) override { return inner_->evaluate(data); }
  std::vector<int64_t> output_shape(const Batch& batch) override { return inner_->output_shape(batch); }
  void save_state(StateWriter& out) const override { inner_->save_state(out); }
  void load_state(StateReader& in) override { inner_->load_state(in); }

 private:
  std::unique_ptr<Model> inner_;
  size_t calls_ = 0, fail_at_;
  std::atomic<bool>* armed_;
};

}  // namespace ptrain::test
