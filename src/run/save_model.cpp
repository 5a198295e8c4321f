#include "run/save_model.hpp"

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "model/saved_model.hpp"
#include "plan/plan_json.hpp"
#include "run/build_info.hpp"
#include "run/report.hpp"

namespace ptrain {

namespace {

constexpr const char* kField = "run.save_model";

// What the file says of how it was made: for a reader, and for ptrain eval.
nlohmann::json metadata(const RunPlan& plan, const RunResult& r, const SavedModelFacts& facts) {
  nlohmann::json j;
  j["format"] = kSavedModelFormat;
  j["ptrain"] = {{"version", build_info().version}, {"commit", build_info().commit}};
  j["saved_at"] = utc_now();
  j["model"] = plan_to_json(plan)["model"];
  j["parameters"] = r.final_params.size();
  j["task"] = r.task == Task::LanguageModel ? "language-model" : "classification";
  j["classes"] = facts.classes;
  j["input_shape"] = facts.input_shape;
  j["label_shape"] = facts.label_shape;
  nlohmann::json pre = {{"uint8", "scaled by 1/255"}};
  if (facts.standardization)
    pre["standardize"] = {{"mean", facts.standardization->mean}, {"std", facts.standardization->stddev}};
  else
    pre["standardize"] = nullptr;
  if (r.task == Task::LanguageModel) pre = {{"token_ids", "as int64"}};
  j["preprocessing"] = pre;
  if (!r.epochs.empty()) {
    const EpochMetrics& e = r.epochs.back();
    j["final_test"] = {{"loss", e.test_loss},
                       {"accuracy", e.test_accuracy},
                       {"perplexity", e.test_perplexity},
                       {"samples", r.test_samples},
                       {"targets", e.test_targets}};
  } else {
    j["final_test"] = nullptr;
  }
  j["plan"] = plan_to_json(plan);
  return j;
}

}  // namespace

void save_model(const std::string& path, const RunPlan& plan, const RunResult& result) {
  const std::string label = std::string(kField) + ": " + path;
  if (result.caller_model)
    throw Error(
        label +
        ": the model came from the caller (RunInputs::model), not the plan; it has no TorchScript form");
  if (result.final_params.empty())
    throw Error(label + ": the run holds no trained parameters here (under mpirun, rank 0 holds them)");
  SavedModelFacts facts;
  facts.ptrain_version = build_info().version;
  facts.input_shape = result.model_input.sample_shape;
  facts.label_shape = result.model_input.label_shape;
  facts.classes = result.model_input.classes;
  facts.standardization = result.standardization;
  save_model_file(path, plan.model, result.model_input, result.final_params, facts,
                  metadata(plan, result, facts).dump(2), label);
}

void check_save_model(const RunPlan& plan, bool caller_model, bool writes, Problems& problems) {
  const std::string& path = plan.run.save_model;
  if (path.empty()) return;
  if (caller_model)
    return problems.add(kField,
                        ": the model comes from the caller (RunInputs::model), not the plan, and has no "
                        "TorchScript form to save");
  if (auto why = why_not_savable(plan.model)) return problems.add(kField, ": " + *why);
  if (!writes) return;
  try {
    check_output_path(path, path);
  } catch (const Error& e) {
    problems.add(kField, std::string(": ") + e.what());
  }
}

}  // namespace ptrain
