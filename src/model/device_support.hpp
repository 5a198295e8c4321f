#pragma once
// Whether this build and this machine can run a compute device (a build's
// LibTorch may lack CUDA; a machine may have no GPU, or fewer than asked),
// and what it is. Torch-free: model/torch/device_support.cpp answers with
// LibTorch, model/without_torch/ for builds without it.
#include <string>

#include "core/compute_device.hpp"

namespace ptrain {

// "": it can run here; otherwise why not, in words a user can act on
// ("this ptrain's LibTorch 1.13.0 has no CUDA support; ...").
std::string device_unavailable(const ComputeDevice& device);
// The GPUs LibTorch sees (0 without CUDA).
int visible_gpus();
// Makes GPU runs repeatable before their first CUDA work: deterministic
// algorithms, and cuBLAS's fixed workspace (CUBLAS_WORKSPACE_CONFIG, unless
// the environment sets it). Nothing for the CPU.
void prepare_device(const ComputeDevice& device);
// "cpu", or "cuda:0 (NVIDIA H100 80GB HBM3)" where the driver names it.
std::string device_description(const ComputeDevice& device);

}  // namespace ptrain
