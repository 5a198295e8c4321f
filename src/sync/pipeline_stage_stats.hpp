#pragma once
// What one pipeline stage did over a run, per step on average where it says
// so: its share of the model, where its time went (computing, or idle: the
// bubble, waiting for its neighbours and their messages), what crossed its
// boundaries, and the memory it needed.
#include <cstddef>
#include <cstdint>

namespace ptrain {

struct PipelineStageStats {
  int stage = 0, group = 0;
  uint64_t first_layer = 0, end_layer = 0;  // layers [first, end)
  uint64_t parameters = 0;
  uint64_t steps = 0;
  double compute_seconds = 0;    // forward and backward passes, summed over the steps
  double idle_seconds = 0;       // waiting for activations and gradients (sending them included)
  double allreduce_seconds = 0;  // with several pipelines: averaging the stage's gradient among them
  double optimizer_seconds = 0;  // updating the stage's parameters
  uint64_t bytes_sent = 0, bytes_received = 0;  // activations and their gradients, over the steps
  uint64_t allreduce_bytes_sent = 0;            // with several pipelines: the stage's gradient, over the steps
  uint64_t peak_activation_bytes = 0;  // layer outputs held for backward passes, at the most
  uint64_t micro_batches_in_flight = 0;  // whose activations it held at once, at the most
  uint64_t state_bytes = 0;  // its parameters, gradients, their running sum and the optimizer's state

  double step_seconds() const { return compute_seconds + idle_seconds + allreduce_seconds + optimizer_seconds; }
  // The bubble: the fraction of the step the stage waited for its neighbours.
  double idle_fraction() const { return step_seconds() > 0 ? idle_seconds / step_seconds() : 0; }
};

}  // namespace ptrain
