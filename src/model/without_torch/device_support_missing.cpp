// A build without LibTorch computes on the CPU only.
#include "model/device_support.hpp"

namespace ptrain {

std::string device_unavailable(const ComputeDevice& device) {
  if (device.cpu()) return {};
  return "this build of ptrain has no LibTorch (built with PTRAIN_WITH_TORCH=OFF), so no GPU";
}

int visible_gpus() { return 0; }

void prepare_device(const ComputeDevice&) {}

std::string device_description(const ComputeDevice& device) { return device_text(device); }

}  // namespace ptrain
