#pragma once
// What the CPU running ptrain offers, asked once. Kernels compiled a second
// time for AVX2 (and FMA) beside their portable loops pick one by these.
namespace ptrain {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
inline bool cpu_has_avx2() {
  static const bool supported = [] {
    __builtin_cpu_init();  // needed only before main() starts, harmless after
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return supported;
}

inline bool cpu_has_avx2_fma() {
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return supported;
}
#else
inline bool cpu_has_avx2() { return false; }
inline bool cpu_has_avx2_fma() { return false; }
#endif

}  // namespace ptrain
