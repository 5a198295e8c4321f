#pragma once
// What the tests of run() share: a small data set and a plan on the native
// model (so they run in the sanitizer builds too).
#include "data/synthetic.hpp"
#include "run/run.hpp"

namespace ptrain::test {

inline RunInputs data_only(LoadedData data) {
  RunInputs inputs;
  inputs.data = std::move(data);
  return inputs;
}

// Gaussian clusters: the first `train` of `total` samples train, all of them test.
inline LoadedData clusters(size_t total, size_t train, size_t features, int classes, uint64_t seed) {
  const Dataset all = make_gaussian_clusters(total, features, classes, seed, 1.5f);
  return {all.head(train), all};
}

// Softmax regression on unstandardised features, threads not pinned.
inline RunPlan softmax_plan(int workers, size_t batch, double epochs) {
  RunPlan plan;
  plan.model = SoftmaxOptions{};
  plan.data_controls.standardize = false;
  plan.run.workers = workers;
  plan.run.batch = batch;
  plan.run.epochs = epochs;
  plan.run.pin = false;
  plan.run.comm_timeout = 30;
  return plan;
}

}  // namespace ptrain::test
