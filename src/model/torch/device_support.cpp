#include "model/device_support.hpp"

#include <torch/torch.h>
#include <torch/version.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ptrain {

namespace {

// PTRAIN_TORCH_CUDA is 1 where CMake found a LibTorch built with CUDA.
#ifndef PTRAIN_TORCH_CUDA
#define PTRAIN_TORCH_CUDA 0
#endif

// The models the NVIDIA driver lists, one per GPU it drives.
std::vector<std::string> driver_gpu_models() {
  std::vector<std::string> models;
  std::error_code ec;
  for (const auto& gpu : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::ifstream info(gpu.path() / "information");
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("Model:", 0) != 0) continue;
      const size_t start = line.find_first_not_of(" \t", 6);
      models.push_back(start == std::string::npos ? std::string() : line.substr(start));
    }
  }
  return models;
}

}  // namespace

int visible_gpus() {
  if (!PTRAIN_TORCH_CUDA) return 0;
  return static_cast<int>(torch::cuda::device_count());
}

std::string device_unavailable(const ComputeDevice& device) {
  if (device.cpu()) return {};
  if (!PTRAIN_TORCH_CUDA)
    return fmt::format("this ptrain's LibTorch ({}) has no CUDA support: build against a CUDA LibTorch "
                       "(docs/building.md: \"GPUs\")",
                       TORCH_VERSION);
  const int gpus = visible_gpus();
  if (gpus == 0) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return std::string("no GPU is visible") +
           (visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : std::string());
  }
  if (device.index >= gpus)
    return "there " + std::string(gpus == 1 ? "is 1 GPU (cuda:0)" : "are " + std::to_string(gpus) + " GPUs (cuda:0 to cuda:" +
                                                                    std::to_string(gpus - 1) + ")") +
           ", no cuda:" + std::to_string(device.index);
  return {};
}

void prepare_device(const ComputeDevice& device) {
  if (device.cpu()) return;
  // cuBLAS picks its reduction order by workspace unless it is fixed;
  // deterministic algorithms refuse the nondeterministic kernels (scatter-add...).
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  at::globalContext().setDeterministicCuDNN(true);
  at::globalContext().setBenchmarkCuDNN(false);
}

std::string device_description(const ComputeDevice& device) {
  const std::string text = device_text(device);
  if (device.cpu()) return text;
  // The driver's list is in bus order, CUDA's may not be: name the GPU only where there is one.
  const auto models = driver_gpu_models();
  if (models.size() == 1 && visible_gpus() == 1) return text + " (" + models.front() + ")";
  return text;
}

}  // namespace ptrain
