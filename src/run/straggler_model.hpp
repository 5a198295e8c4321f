#pragma once
// A worker made FACTOR times slower (--straggler RANK:FACTOR), for
// experiments and tests: after each forward/backward it sleeps (FACTOR - 1)
// times what that took, so it slows in proportion to its own compute and
// leaves the cores to the others while it waits. A sleep is cut at
// `longest`: past the communication timeout the others give up on it all the
// same (the run ends naming it), and on threads the process could only end
// once this one woke (a factor of 10^6 slept for hours).
#include <algorithm>
#include <chrono>
#include <thread>

#include "core/model.hpp"
#include "core/stopwatch.hpp"
#include "core/timeline.hpp"

namespace ptrain {

class StragglerModel : public Model {
 public:
  StragglerModel(Model& inner, double factor, std::chrono::duration<double> longest)
      : inner_(inner), factor_(factor), longest_(longest) {}
  std::string name() const override { return inner_.name(); }
  const FlatLayout& layout() const override { return inner_.layout(); }
  std::span<float> params() override { return inner_.params(); }
  std::span<float> grads() override { return inner_.grads(); }
  float forward_backward(const Batch& batch) override {
    Stopwatch clock;
    const float loss = inner_.forward_backward(batch);
    TimelineSpan span("straggler delay");
    std::this_thread::sleep_for(std::min(std::chrono::duration<double>((factor_ - 1) * clock.seconds()), longest_));
    return loss;
  }
  Metrics evaluate(const Dataset& data) override { return inner_.evaluate(data); }
  bool set_gradient_ready_hook(GradientReadyHook hook) override {
    return inner_.set_gradient_ready_hook(std::move(hook));
  }

 private:
  Model& inner_;
  double factor_;
  std::chrono::duration<double> longest_;
};

}  // namespace ptrain
