#include "core/compute_device.hpp"

#include <charconv>

namespace ptrain {

std::optional<ComputeDevice> parse_compute_device(std::string_view text) {
  if (text == "cpu") return ComputeDevice{};
  if (text == "cuda") return ComputeDevice{true, -1};
  constexpr std::string_view prefix = "cuda:";
  if (!text.starts_with(prefix) || text.size() == prefix.size()) return std::nullopt;
  const std::string_view digits = text.substr(prefix.size());
  int index = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc() || end != digits.data() + digits.size() || index < 0 || digits.front() == '+')
    return std::nullopt;
  return ComputeDevice{true, index};
}

std::string device_text(const ComputeDevice& device) {
  if (device.cpu()) return "cpu";
  return device.index < 0 ? "cuda" : "cuda:" + std::to_string(device.index);
}

ComputeDevice device_for_worker(const ComputeDevice& device, int slot, int gpus) {
  ComputeDevice d = device;
  if (d.cuda && d.index < 0) d.index = gpus > 0 ? slot % gpus : 0;
  return d;
}

}  // namespace ptrain
