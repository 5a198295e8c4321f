#pragma once
// ptrain eval: a model ptrain saved (run/save_model.hpp) scored on a data
// set's test set, samples as the data set stores them, the way training
// scored it after each epoch: the mean loss per target and the task's figure
// (accuracy; perplexity for language models).
#include <nlohmann/json.hpp>
#include <string>

#include "core/model.hpp"
#include "data/data_registry.hpp"
#include "model/saved_model.hpp"
#include "run/report.hpp"

namespace ptrain {

struct Evaluation {
  std::string path;
  SavedModelFacts facts;
  nlohmann::json saved;  // the file's ptrain.json (null when it has none that parses)
  size_t parameters = 0;
  Metrics test;
  size_t correct = 0;  // targets predicted right
  // The samples scored, as the model took them (a token stream as its rows):
  // what Python is given to score the same (ptrain eval --write-samples).
  Dataset samples;
  double seconds = 0;  // loading the model and the data excluded
};

// Loads the model and the data set's test set (its check_test and
// load_test) and scores one on the other, with `threads` LibTorch and
// OpenBLAS threads (1, as each worker of a run evaluates: the same summation
// order, so the same bits as the run's report). Throws ptrain::Error for a file
// that is no model ptrain saved (load_saved_model), missing data files
// (naming the plan's data.* fields), and a test set the model does not fit:
// another sample shape, other targets, more classes.
Evaluation evaluate_saved_model(const std::string& path, const DataChoice& data, int threads = 1);

// The evaluation report (docs/report.md, "ptrain eval --report").
nlohmann::json make_evaluation_report(const Evaluation& evaluation, const DataChoice& data,
                                      const ReportContext& context);

}  // namespace ptrain
