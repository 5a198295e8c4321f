#include "optim/kernel_dispatch.hpp"

namespace ptrain {

bool cpu_has_avx2_fma() {
#if defined(PTRAIN_OPTIM_AVX2_FMA_KERNELS)
  static const bool supported = [] {
    __builtin_cpu_init();  // needed only before main() starts, harmless after
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return supported;
#else
  return false;
#endif
}

}  // namespace ptrain
