#include "model/blas_check.hpp"

#include <dlfcn.h>

#include <filesystem>

namespace ptrain {

BlasInfo detect_blas() {
  // The library that answers sgemm_ in the global scope is the one LibTorch's
  // matrix products call. (OpenBLAS may be loaded as well, through
  // liblapack.so.3, while the reference libblas.so.3 still answers sgemm_.)
  BlasInfo info;
  Dl_info where{};
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  if (!sgemm || dladdr(sgemm, &where) == 0 || !where.dli_fname) return info;
  std::error_code ec;
  const auto resolved = std::filesystem::canonical(where.dli_fname, ec);
  info.library = ec ? where.dli_fname : resolved.string();
  info.is_openblas = info.library.find("openblas") != std::string::npos;
  // Debian installs the reference BLAS under .../blas/; OpenBLAS under .../openblas-*/.
  info.is_reference = !info.is_openblas && info.library.find("/blas/") != std::string::npos;
  return info;
}

void set_openblas_threads(int n) {
  using SetThreads = void (*)(int);
  if (auto fn = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) fn(n);
}

}  // namespace ptrain
