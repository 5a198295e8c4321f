// run.save_model (--save): run() writes the trained model where the plan
// says, or refuses before any work; save_model() does the same for a library
// user after run(). Without LibTorch, saving is refused and says why.
#include "run/save_model.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "data/synthetic.hpp"
#include "model/saved_model.hpp"
#include "run/resume.hpp"
#include "run/run.hpp"
#include "run/run_fixtures.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

LoadedData clusters_600() { return test::clusters(600, 480, 12, 3, 21); }

using test::data_only;

RunPlan small_plan(const std::string& save_to) {
  RunPlan plan;
  plan.model = SoftmaxOptions{};
  plan.run.workers = 2;
  plan.run.batch = 16;
  plan.run.epochs = 1;
  plan.run.placement = Placement::None;
  plan.run.save_model = save_to;
  return plan;
}

TEST(RunSaveModel, WritesTheTrainedModelWithItsPreprocessing) {
  test::ScratchDir dir;
  const std::string path = dir.file("model.pt");
  const RunPlan plan = small_plan(path);
  World world = make_world(plan);
  bool started = false;
  RunCallbacks callbacks;
  callbacks.on_start = [&](const RunStart&) { started = true; };
  if (!can_save_models()) {
    const std::string message =
        test::error_message([&] { run(plan, world, callbacks, data_only(clusters_600())); });
    EXPECT_NE(message.find("run.save_model: saving a model needs LibTorch"), std::string::npos) << message;
    EXPECT_FALSE(started);
    EXPECT_FALSE(std::filesystem::exists(path));
    return;
  }
  const RunResult r = run(plan, world, callbacks, data_only(clusters_600()));
  ASSERT_TRUE(r.standardization);
  SavedModel saved = load_saved_model(path);
  EXPECT_EQ(saved.facts.model, "softmax");
  EXPECT_EQ(saved.facts.input_shape, std::vector<int64_t>{12});
  EXPECT_EQ(saved.facts.classes, 3);
  ASSERT_TRUE(saved.facts.standardization);
  EXPECT_EQ(saved.facts.standardization->mean, r.standardization->mean);
  EXPECT_EQ(saved.facts.standardization->stddev, r.standardization->stddev);
  EXPECT_TRUE(std::equal(r.final_params.begin(), r.final_params.end(), saved.model->params().begin()));
  // On the test set as loaded (not standardised), the score training gave.
  const Metrics m = saved.model->evaluate(clusters_600().test);
  EXPECT_NEAR(m.loss, r.epochs.back().test_loss, 1e-5);
  EXPECT_NEAR(m.accuracy, r.epochs.back().test_accuracy, 1.5 / 600);
  const auto meta = nlohmann::json::parse(saved.metadata_json);
  EXPECT_EQ(meta["model"]["name"], "softmax");
  EXPECT_EQ(meta["plan"]["run"]["save_model"], path);
  EXPECT_EQ(meta["final_test"]["accuracy"].get<double>(), r.epochs.back().test_accuracy);
  EXPECT_EQ(meta["preprocessing"]["standardize"]["mean"].get<float>(), r.standardization->mean);

  // From the library, after run(): the same parameters, elsewhere.
  save_model(dir.file("again.pt"), plan, r);
  SavedModel again = load_saved_model(dir.file("again.pt"));
  EXPECT_TRUE(std::equal(r.final_params.begin(), r.final_params.end(), again.model->params().begin()));
}

TEST(RunSaveModel, RefusesBeforeAnyWork) {
  test::ScratchDir dir;
  bool started = false;
  RunCallbacks callbacks;
  callbacks.on_start = [&](const RunStart&) { started = true; };
  const std::string missing = dir.file("no/such/m.pt");
  RunPlan plan = small_plan(missing);
  World world = make_world(plan);
  std::string message = test::error_message([&] { run(plan, world, callbacks, data_only(clusters_600())); });
  const std::string expected = can_save_models() ? "run.save_model: " + missing + ": directory " +
                                                       dir.file("no/such") + " does not exist"
                                                 : "run.save_model: saving a model needs LibTorch";
  EXPECT_NE(message.find(expected), std::string::npos) << message;

  plan.run.save_model = dir.file("m.pt");
  RunInputs inputs = data_only(clusters_600());
  inputs.model = [](const ModelInput& in) { return SoftmaxOptions{}.make(in); };
  message = test::error_message([&] { run(plan, world, callbacks, inputs); });
  EXPECT_NE(message.find("run.save_model: the model comes from the caller (RunInputs::model)"),
            std::string::npos)
      << message;
  EXPECT_FALSE(started);
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.pt")));
}

TEST(RunSaveModel, AResumedRunMaySaveElsewhere) {
  const RunPlan saved = small_plan("");
  Problems problems;
  check_resume(saved, small_plan("elsewhere.pt"), problems);
  EXPECT_TRUE(problems.empty()) << problems.joined();
}

}  // namespace
}  // namespace ptrain
