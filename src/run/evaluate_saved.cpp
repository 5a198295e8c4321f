#include "run/evaluate_saved.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "core/error.hpp"
#include "core/stopwatch.hpp"
#include "model/model_registry.hpp"
#include "model/torch_models.hpp"
#include "plan/plan_json.hpp"

namespace ptrain {

namespace {

std::string targets_text(const std::vector<int64_t>& label_shape) {
  return label_shape.empty() ? "a class per sample"
                             : fmt::format("a next token per position ({})", label_shape[0]);
}

// The test set the model can score: the samples it takes, its targets, its classes.
void check_fits(const Dataset& test, const SavedModel& saved, const std::string& path) {
  const SavedModelFacts& f = saved.facts;
  if (test.size() == 0) throw Error("data: the test set holds no samples");
  // A recurrent model takes sequences of any length (the stream's rows).
  const bool takes_it = f.recurrent && test.stream() ? test.sample_shape().size() == f.input_shape.size()
                                                     : test.sample_shape() == f.input_shape;
  if (!takes_it)
    throw Error(fmt::format("data: the test set's samples have shape [{}]; the model in {} takes [{}]",
                            fmt::join(test.sample_shape(), ", "), path, fmt::join(f.input_shape, ", ")));
  if (test.label_shape().size() != f.label_shape.size() || (!f.recurrent && test.label_shape() != f.label_shape))
    throw Error(fmt::format("data: the test set has {}; the model in {} predicts {}",
                            targets_text(test.label_shape()), path, targets_text(f.label_shape)));
  if (test.num_classes() > f.classes)
    throw Error(fmt::format("data: the test set has {} classes (labels up to {}); the model in {} knows {}",
                            test.num_classes(), test.num_classes() - 1, path, f.classes));
}

}  // namespace

Evaluation evaluate_saved_model(const std::string& path, const DataChoice& data, int threads) {
  Problems problems;
  std::visit([&](const auto& d) { d.check_test("data.", problems); }, data);
  problems.throw_if_any();
  set_compute_threads(threads);
  SavedModel saved = load_saved_model(path);
  Dataset test = std::visit([](const auto& d) { return d.load_test(); }, data);
  // A token stream is scored in pieces of the length the model was saved
  // for; by a recurrent model, as whole rows of them, as its training scored it.
  if (test.stream()) {
    const size_t length = saved.facts.input_shape.size() == 1 ? static_cast<size_t>(saved.facts.input_shape[0])
                                                               : kDefaultSequenceLength;
    test = saved.facts.recurrent ? test.as_evaluation_rows(length) : test.chunked(length);
  }
  check_fits(test, saved, path);

  Evaluation e;
  e.path = path;
  e.facts = saved.facts;
  e.parameters = saved.model->params().size();
  e.saved = nlohmann::json::parse(saved.metadata_json, nullptr, /*allow_exceptions=*/false);
  if (e.saved.is_discarded()) e.saved = nullptr;
  const Stopwatch clock;
  e.test = saved.model->evaluate(test);
  e.seconds = clock.seconds();
  e.samples = std::move(test);
  e.correct = static_cast<size_t>(std::llround(e.test.accuracy * static_cast<double>(e.test.targets)));
  return e;
}

nlohmann::json make_evaluation_report(const Evaluation& e, const DataChoice& data,
                                      const ReportContext& context) {
  nlohmann::json report;
  report["schema_version"] = kReportSchemaVersion;
  report["command"] = "eval";
  report["ptrain"] = ptrain_json();
  report["host"] = host_json();
  report["started_at"] = context.started_at;
  report["command_line"] = context.command_line;
  const SavedModelFacts& f = e.facts;
  nlohmann::json standardization = nullptr;
  if (f.standardization)
    standardization = {{"mean", f.standardization->mean}, {"std", f.standardization->stddev}};
  report["model"] = {{"path", e.path},
                     {"name", f.model},
                     {"parameters", e.parameters},
                     {"task", f.task() == Task::LanguageModel ? "language-model" : "classification"},
                     {"classes", f.classes},
                     {"input_shape", f.input_shape},
                     {"label_shape", f.label_shape},
                     {"standardization", standardization},
                     {"ptrain_version", f.ptrain_version},
                     {"saved", e.saved}};
  RunPlan plan;
  plan.data = data;
  nlohmann::json data_json = plan_to_json(plan)["data"];
  // Only the data set's own fields: the model brings its own preprocessing.
  DataControls::fields(plan.data_controls,
                       [&](const char* name, auto&, const char*, const Range&) { data_json.erase(name); });
  report["data"] = data_json;
  report["test"] = {{"samples", e.test.samples},   {"targets", e.test.targets},       {"loss", e.test.loss},
                    {"accuracy", e.test.accuracy}, {"perplexity", e.test.perplexity}, {"correct", e.correct},
                    {"seconds", e.seconds}};
  return report;
}

}  // namespace ptrain
