#pragma once
// `ptrain train`: its options, their checks and the run.
#include <CLI/CLI.hpp>

#include "model/model_config.hpp"
#include "train/trainer.hpp"

namespace ptrain {

struct TrainOptions {
  ModelConfig model;
  std::string hidden = "128";  // comma-separated widths, parsed into model.hidden
  TrainConfig train;           // batch defaults to 32 per worker here
  std::string optimizer = "adam";
  std::string allreduce = "native";
  std::string bucket_size = "25MiB";      // parsed into train.strategy.bucket_bytes
  std::string int8_rounding = "nearest";  // or stochastic
  float lr = 1e-3f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  std::string data_dir;
  bool standardize = true;
  size_t train_samples = 0;  // 0: the whole training set
  std::string report_path;
  int threads_per_worker = 1;
  double comm_timeout_s = 60;
  std::string stale_policy = "none";  // parsed into train.strategy.stale_policy
  std::string straggler;              // RANK:FACTOR, parsed into train.straggler_*
  CLI::Option* workers_option = nullptr;  // to tell a given --workers from the default
};

// Registers the subcommand and its options on `app`; the returned options are
// filled in when the command line is parsed.
CLI::App* add_train_command(CLI::App& app, TrainOptions& options);

// Checks every option, loads the data, trains, prints and writes the report.
// Throws ptrain::Error for bad input, before any work where it can be known then.
int run_train_command(TrainOptions& options);

}  // namespace ptrain
