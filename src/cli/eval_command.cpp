#include "cli/eval_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/path_option.hpp"
#include "cli/train_command.hpp"
#include "core/error.hpp"
#include "data/npy_file.hpp"
#include "run/evaluate_saved.hpp"
#include "run/result_file.hpp"

namespace ptrain {

namespace {

// "accuracy 84.13% (8413 of 10000)  loss 0.4567", or perplexity first for a language model.
std::string metrics_line(const Metrics& m, size_t correct, Task task) {
  if (task == Task::LanguageModel)
    return fmt::format("perplexity {:.3f}  loss {:.4f}  next-token accuracy {:.2f}% ({} of {})", m.perplexity,
                       m.loss, 100 * m.accuracy, correct, m.targets);
  return fmt::format("accuracy {:.2f}% ({} of {})  loss {:.4f}", 100 * m.accuracy, correct, m.targets,
                     m.loss);
}

void print_model(const Evaluation& e) {
  const SavedModelFacts& f = e.facts;
  std::string inputs = "raw inputs as loaded";
  if (f.task() == Task::LanguageModel)
    inputs = "token ids";
  else if (f.standardization)
    inputs = fmt::format("standardised with mean {:.4f} and std {:.4f}", f.standardization->mean,
                         f.standardization->stddev);
  fmt::print("ptrain: {} model ({} parameters) from {}, saved by ptrain {}; samples [{}], {} {}, {}\n",
             f.model, e.parameters, e.path, f.ptrain_version, fmt::join(f.input_shape, ", "), f.classes,
             f.task() == Task::LanguageModel ? "tokens" : "classes", inputs);
  // What the run that saved it measured on its own test set, to compare with.
  if (e.saved.is_object() && e.saved.contains("final_test") && e.saved["final_test"].is_object()) {
    const auto& t = e.saved["final_test"];
    Metrics m;
    m.loss = t.value("loss", 0.0);
    m.accuracy = t.value("accuracy", 0.0);
    m.perplexity = t.value("perplexity", 0.0);
    // Files saved before "targets" was written: the samples times their targets each.
    m.targets = t.value("targets", t.value("samples", size_t{0}) *
                                       (f.label_shape.empty() ? 1 : static_cast<size_t>(f.label_shape[0])));
    const size_t correct = static_cast<size_t>(std::llround(m.accuracy * static_cast<double>(m.targets)));
    fmt::print("ptrain: the run that saved it measured {} on its test set\n",
               metrics_line(m, correct, f.task()));
  }
}

}  // namespace

CLI::App* add_eval_command(CLI::App& app, EvalCommand& c) {
  auto* cmd = app.add_subcommand(
      "eval",
      "Evaluate a model that ptrain train --save wrote on a data set's test set (Fashion-MNIST by default): "
      "the loss and the accuracy (perplexity for a language model)");
  cmd->add_option("--model", c.model_path,
                  "The saved model (a TorchScript file written by ptrain train --save)")
      ->required()
      ->group("Model")
      ->type_name("FILE")
      ->check(non_empty_path());
  c.data_flags = PlanFlags::test_data(*cmd);
  cmd->add_option("--report", c.report_path, "Write the evaluation as JSON to this file")
      ->group("Output")
      ->type_name("FILE")
      ->check(non_empty_path());
  cmd->add_option("--write-samples", c.samples_dir,
                  "Write the samples it scored, as the model took them (a token stream as the rows it read), to "
                  "features.npy and labels.npy in this existing directory, for Python to score the same way "
                  "(examples/python_eval/evaluate.py --features --labels)")
      ->group("Output")
      ->type_name("DIR")
      ->check(non_empty_path());
  cmd->add_flag("--quiet,-q", c.quiet, "Print only the result line (and errors)")->group("Output");
  return cmd;
}

int run_eval_command(EvalCommand& c, const std::vector<std::string>& command_line) {
  RunPlan plan;
  Problems problems;
  plan = c.data_flags->apply(plan, problems);
  problems.throw_if_any();
  if (!c.report_path.empty()) check_writable(c.report_path);
  const std::string features_path = c.samples_dir + "/features.npy", labels_path = c.samples_dir + "/labels.npy";
  if (!c.samples_dir.empty()) {
    check_writable(features_path, "--write-samples");
    check_writable(labels_path, "--write-samples");
  }
  const std::string started_at = utc_now();
  try {
    const Evaluation e = evaluate_saved_model(c.model_path, plan.data);
    if (!c.quiet) {
      print_model(e);
      fmt::print("ptrain: data {}: {} test samples\n", DataRegistry::name_of(plan.data), e.test.samples);
    }
    fmt::print("test {}\n", metrics_line(e.test, e.correct, e.facts.task()));
    if (!c.samples_dir.empty()) {
      write_npy_dataset(e.samples, features_path, labels_path, "--write-samples " + c.samples_dir);
      if (!c.quiet) fmt::print("ptrain: samples {} and {}\n", features_path, labels_path);
    }
    if (!c.report_path.empty()) {
      write_json_file(c.report_path, make_evaluation_report(e, plan.data, {command_line, started_at}));
      if (!c.quiet) fmt::print("ptrain: report {}\n", c.report_path);
    }
  } catch (const Error& e) {
    throw Error(with_flags(e.what(), plan));
  }
  return 0;
}

}  // namespace ptrain
