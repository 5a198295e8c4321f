#pragma once
// `ptrain simulate`: the step-time model (perfmodel/) tabulated over worker
// counts, link bandwidths and exchanges, optionally calibrated from a run report.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "perfmodel/step_time_model.hpp"

namespace ptrain {

struct SimulateOptions {
  StepModelConfig model;
  double compute_per_sample_ms = 1;
  double latency_us = 50;
  double memory_gbytes_s = 10;  // hierarchical: a host's memory bandwidth
  std::vector<double> bandwidths_gbit = {1, 10, 100};
  std::vector<size_t> workers = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  std::vector<std::string> exchanges = {"ring", "hd", "allgather", "ps"};
  std::string codec = "none";      // dense exchanges: none (fp32), fp16 or int8
  std::string sparse_codec = "dgc";  // allgather: the codec whose CPU cost --codec-costs gives
  std::string pull_codec = "none";   // ps: what a pull sends back (compress/pull_codecs.hpp, with its defaults)
  std::string codec_costs;         // a `ptrain bench compress --csv` file
  std::string calibrate_report;    // a `ptrain train --report` file
  double calibrate_bandwidth_gbit = 1;
  std::string csv_path;
  std::string schedule = "1f1b";  // pipeline: gpipe or 1f1b
  double microbatch_ns_per_parameter = 0;
  double hop_bandwidth_gbit = 0;  // pipeline: 0, --bandwidth
};

CLI::App* add_simulate_command(CLI::App& app, SimulateOptions& options);
int run_simulate_command(SimulateOptions& options);

}  // namespace ptrain
