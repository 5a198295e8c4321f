#pragma once
// What `ptrain shm` and `ptrain sweep` share: the model, the data, the loss
// set, and one shared-memory run with its test evaluation.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/dataset.hpp"
#include "model/model_config.hpp"
#include "shm/async_sgd.hpp"

namespace ptrain {

struct ShmOptions {
  ModelConfig model;
  std::string hidden = "128,128,128";  // the MLP of the Leashed-SGD paper: 784 -> 3 x 128 -> 10
  ShmConfig shm;                       // algorithm, threads, batch, lr, ... (strategy and backoff parsed in)
  std::string strategy = "leashed";
  std::string backoff = "none";
  std::string data_dir;
  bool standardize = true;  // as `ptrain train`
  size_t train_samples = 0;  // 0: the whole training set
  size_t loss_sample = 10000;  // training samples the loss is measured on (0: all)
};

// Registers the options both commands take.
void add_shm_options(CLI::App& cmd, ShmOptions& o);

// Parses and checks what needs no data (model, widths, backoff, data directory).
void check_shm_options(ShmOptions& o);

// The loaded data and a factory of replicas, ready for runs.
struct ShmSetup {
  Dataset train_set, test_set, loss_set;
  ReplicaFactory factory;
  size_t parameters = 0;
};
ShmSetup load_shm_setup(const ShmOptions& o);

// The configuration as JSON, for the report.
nlohmann::json shm_config_json(const ShmOptions& o, const ShmSetup& setup);

// One run and its test evaluation.
struct ShmRun {
  AsyncSgdResult result;
  Metrics test;
};
ShmRun run_shm(const ShmConfig& config, const ShmSetup& setup, const LossCheckCallback& on_check = {});

}  // namespace ptrain
