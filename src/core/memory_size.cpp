#include "core/memory_size.hpp"

#include <fmt/format.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>

namespace ptrain {

namespace {

// A cgroup limit file's number ("max" or no file: no limit).
uint64_t cgroup_limit(const char* path) {
  std::ifstream in(path);
  unsigned long long value = 0;
  if (in >> value) return value;
  return std::numeric_limits<uint64_t>::max();
}

}  // namespace

uint64_t memory_size_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  uint64_t bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                         : std::numeric_limits<uint64_t>::max();
  bytes = std::min(bytes, cgroup_limit("/sys/fs/cgroup/memory.max"));                     // cgroup v2
  bytes = std::min(bytes, cgroup_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes"));  // cgroup v1
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    bytes = std::min<uint64_t>(bytes, limit.rlim_cur);
  return bytes;
}

std::string gib_text(double bytes) {
  char text[64];
  const double gib = bytes / (1024.0 * 1024.0 * 1024.0);
  if (gib >= 1e6) std::snprintf(text, sizeof text, "%.3g GiB", gib);
  else std::snprintf(text, sizeof text, "%.1f GiB", gib);
  return text;
}

std::string size_text(double bytes) {
  if (bytes < 1024) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1024.0 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024);
  if (bytes < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  return gib_text(bytes);
}

std::optional<std::string> beyond_memory(double bytes) {
  const double memory = static_cast<double>(memory_size_bytes());
  if (!(bytes > memory)) return std::nullopt;
  return gib_text(bytes) + ", more than the " + gib_text(memory) + " of memory this machine has";
}

}  // namespace ptrain
