#pragma once
// Calibrating the step-time model from a measured run: its report gives the
// model size, the batch, the workers and the mean step time; with the link
// bandwidth it ran on, the compute per sample is what is left of the step
// once the modelled exchange is taken off.
#include <string>

#include "perfmodel/step_time_model.hpp"

namespace ptrain {

struct Calibration {
  double parameters = 0;
  size_t batch = 0;
  size_t workers = 0;
  double step_s = 0;  // measured
  double compute_per_sample_s = 0;
};

// `model` gives the exchange, codec, bandwidth and latency the run had.
// Throws ptrain::Error naming the file when it is not a run report, or when
// its step is shorter than the modelled exchange (a wrong bandwidth, say).
Calibration calibrate_from_report(const std::string& report_path, const StepModelConfig& model);

}  // namespace ptrain
