#include "cli/shm_options.hpp"

#include <fmt/format.h>

#include <thread>

#include "cli/model_widths.hpp"
#include "core/error.hpp"
#include "data/fashion_mnist.hpp"
#include "data/random_subset.hpp"
#include "model/torch/model_factory.hpp"

namespace ptrain {

void add_shm_options(CLI::App& cmd, ShmOptions& o) {
  o.data_dir = kDefaultFashionMnistDir;
  auto& s = o.shm;
  cmd.add_option("--model", o.model.name, "Model: mlp, cnn or softmax");
  cmd.add_option("--hidden", o.hidden, "MLP hidden widths, comma-separated");
  cmd.add_option("--persistence", s.persistence,
                 "leashed: retries of a failed swap before the gradient is dropped (-1: no bound)");
  cmd.add_option("--backoff", o.backoff, "After a contended lock or failed swap: none, exp or exp-jitter");
  cmd.add_option("--backoff-min", s.backoff.min_us, "Backoff: first wait, microseconds");
  cmd.add_option("--backoff-max", s.backoff.max_us, "Backoff: longest wait, microseconds");
  cmd.add_flag("--pin,!--no-pin", s.pin, "Pin thread t to the t-th core the process may use");
  cmd.add_option("--epochs", s.epochs,
                 "Most passes over the training set (samples of all threads together; fractions allowed)");
  cmd.add_option("--target-loss", s.target_loss, "Stop when the training loss is at most this (0: no target)");
  cmd.add_option("--loss-sample", o.loss_sample,
                 "Measure the training loss on this fixed random sample of the training set (0: all of it)");
  cmd.add_option("--check-every", s.check_every, "Updates between loss checks (0: a tenth of an epoch)");
  cmd.add_option("--diverge-above", s.diverge_above, "A training loss above this counts as diverged");
  cmd.add_option("--time-limit", s.time_limit_s, "Stop after this many seconds of training (0: no limit)");
  cmd.add_option("--seed", s.seed, "Seed for data order and initial weights");
  cmd.add_option("--data", o.data_dir, "Directory with the Fashion-MNIST IDX files (.gz or not)");
  cmd.add_flag("--standardize,!--no-standardize", o.standardize,
               "Standardise pixels with the training set's mean and deviation (else only scale to [0,1])");
  cmd.add_option("--train-samples", o.train_samples, "Use only the first N training samples (0: all)");
}

void check_shm_options(ShmOptions& o) {
  if (!ModelRegistry::make(o.model.name)) throw Error("--model: " + ModelRegistry::unknown("model", o.model.name));
  o.model.hidden = parse_widths(o.hidden);
  o.shm.algorithm = parse_shm_algorithm(o.strategy);
  o.shm.backoff.kind = parse_backoff_kind(o.backoff);
  check_fashion_mnist_dir(o.data_dir);
}

ShmSetup load_shm_setup(const ShmOptions& o) {
  ShmSetup setup;
  setup.train_set = load_fashion_mnist(o.data_dir, Split::Train);
  setup.test_set = load_fashion_mnist(o.data_dir, Split::Test);
  if (o.train_samples > 0) setup.train_set = setup.train_set.head(o.train_samples);
  if (o.standardize) {
    const auto s = fit_standardization(setup.train_set);
    apply_standardization(setup.train_set, s);
    apply_standardization(setup.test_set, s);
  }
  // The loss set is fixed by the seed, whatever the run.
  setup.loss_set = random_subset(setup.train_set, o.loss_sample, o.shm.seed);
  ModelConfig model = o.model;
  model.init_seed = o.shm.seed;
  const auto shape = setup.train_set.sample_shape();
  const int classes = setup.train_set.num_classes();
  setup.factory = [model, shape, classes] { return make_model(model, shape, classes); };
  setup.parameters = setup.factory()->params().size();
  return setup;
}

nlohmann::json shm_config_json(const ShmOptions& o, const ShmSetup& setup) {
  const ShmConfig& s = o.shm;
  return {{"model", o.model.name},
          {"hidden", o.model.hidden},
          {"parameters", setup.parameters},
          {"strategy", to_string(s.algorithm)},
          {"threads", s.threads},
          {"batch", s.batch},
          {"lr", s.optimizer.lr},
          {"epochs", s.epochs},
          {"persistence", s.persistence},
          {"backoff", to_string(s.backoff.kind)},
          {"backoff_min_us", s.backoff.min_us},
          {"backoff_max_us", s.backoff.max_us},
          {"pin", s.pin},
          {"seed", s.seed},
          {"target_loss", s.target_loss},
          {"check_every", s.check_every},
          {"diverge_above", s.diverge_above},
          {"time_limit_s", s.time_limit_s},
          {"data", o.data_dir},
          {"train_samples", setup.train_set.size()},
          {"loss_samples", setup.loss_set.size()},
          {"test_samples", setup.test_set.size()},
          {"standardize", o.standardize},
          {"hardware_threads", std::thread::hardware_concurrency()}};
}

ShmRun run_shm(const ShmConfig& config, const ShmSetup& setup, const LossCheckCallback& on_check) {
  ShmRun run;
  run.result = run_async_sgd(config, setup.train_set, setup.loss_set, setup.factory, on_check);
  auto model = setup.factory();
  std::copy(run.result.final_params.begin(), run.result.final_params.end(), model->params().begin());
  run.test = model->evaluate(setup.test_set);
  return run;
}

}  // namespace ptrain
