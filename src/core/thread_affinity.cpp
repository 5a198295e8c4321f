#include "core/thread_affinity.hpp"

#include <pthread.h>
#include <sched.h>

namespace ptrain {

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

int pin_current_thread(int slot) {
  static const std::vector<int> cpus = allowed_cpus();
  if (cpus.empty() || slot < 0) return -1;
  const int cpu = cpus[static_cast<size_t>(slot) % cpus.size()];
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? cpu : -1;
}

}  // namespace ptrain
