// The library from an outside program, without LibTorch headers:
//   cmake: examples/softmax_run/CMakeLists.txt (find_package(ptrain)); or
//   g++ -std=c++20 softmax_run.cpp $(pkg-config --cflags --libs --static ptrain) -o softmax_run
// trains ptrain's native softmax regression on synthetic clusters with 2
// workers and the ssp strategy, and prints the plan it ran.
#include <ptrain/ptrain.hpp>

#include <cstdio>

#include "data/synthetic.hpp"

int main() {
  try {
    ptrain::RunPlan plan;
    plan.model = ptrain::SoftmaxOptions{};
    plan.strategy = ptrain::SspOptions{};
    plan.optimizer = ptrain::SgdOptions{.lr = 0.1f};
    plan.data_controls.standardize = false;
    plan.run.workers = 2;
    plan.run.batch = 16;
    plan.run.epochs = 2;
    const ptrain::Dataset all = ptrain::make_gaussian_clusters(1200, 10, 3, 1, 1.0f);
    ptrain::RunInputs inputs;
    inputs.data = ptrain::LoadedData{all.head(1000), all};
    ptrain::World world = ptrain::make_world(plan);
    const ptrain::RunResult r = ptrain::run(plan, world, {}, inputs);
    std::printf("%s\ntest accuracy %.3f\n", ptrain::plan_to_json(ptrain::resolved_plan(plan, world)).dump().c_str(),
                r.epochs.back().test_accuracy);
    return r.epochs.back().test_accuracy > 0.8 ? 0 : 1;
  } catch (const ptrain::Error& e) {
    std::fprintf(stderr, "softmax_run: error: %s\n", e.what());
    return 1;
  }
}
