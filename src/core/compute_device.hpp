#pragma once
// Where a worker computes its forward and backward passes: the CPU, or a
// CUDA GPU. Written "cpu", "cuda" (the workers spread over the visible GPUs,
// worker w on GPU w mod G; an MPI rank by its rank on its host) or "cuda:N"
// (every worker on GPU N). Only text here: model/device_support.hpp says
// whether this build and this machine can run it.
#include <optional>
#include <string>
#include <string_view>

namespace ptrain {

struct ComputeDevice {
  bool cuda = false;
  int index = -1;  // cuda: the GPU (-1: one per worker, spread over the visible GPUs)
  // Keep the model's parameters and gradients in buffers of the device's own
  // and copy between them and the host's every step, as on a GPU, even on the
  // CPU: tests the GPU path's data movement where there is no GPU.
  bool staged = false;

  bool cpu() const { return !cuda; }
  bool operator==(const ComputeDevice&) const = default;
};

// nullopt: `text` is not cpu, cuda or cuda:N.
std::optional<ComputeDevice> parse_compute_device(std::string_view text);
// "cpu", "cuda", "cuda:1".
std::string device_text(const ComputeDevice& device);
// The device of one worker: "cuda" becomes cuda:(slot mod gpus), where `slot`
// is the worker's place among those of its process (threads) or host (ranks).
ComputeDevice device_for_worker(const ComputeDevice& device, int slot, int gpus);

}  // namespace ptrain
