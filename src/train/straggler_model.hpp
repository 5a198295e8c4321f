#pragma once
// A worker made FACTOR times slower (--straggler RANK:FACTOR), for
// experiments and tests: after each forward/backward it sleeps (FACTOR - 1)
// times what that took, so it slows in proportion to its own compute and
// leaves the cores to the others while it waits.
#include <thread>

#include "core/model.hpp"
#include "core/stopwatch.hpp"

namespace ptrain {

class StragglerModel : public Model {
 public:
  StragglerModel(Model& inner, double factor) : inner_(inner), factor_(factor) {}
  std::string name() const override { return inner_.name(); }
  const FlatLayout& layout() const override { return inner_.layout(); }
  std::span<float> params() override { return inner_.params(); }
  std::span<float> grads() override { return inner_.grads(); }
  float forward_backward(const Batch& batch) override {
    Stopwatch clock;
    const float loss = inner_.forward_backward(batch);
    std::this_thread::sleep_for(std::chrono::duration<double>((factor_ - 1) * clock.seconds()));
    return loss;
  }
  Metrics evaluate(const Dataset& data) override { return inner_.evaluate(data); }
  bool set_gradient_ready_hook(GradientReadyHook hook) override {
    return inner_.set_gradient_ready_hook(std::move(hook));
  }

 private:
  Model& inner_;
  double factor_;
};

}  // namespace ptrain
