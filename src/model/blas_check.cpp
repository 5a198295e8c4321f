#include "model/blas_check.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <filesystem>

namespace ptrain {

namespace {

int find_libblas(struct dl_phdr_info* info, size_t, void* out) {
  if (info->dlpi_name && std::strstr(info->dlpi_name, "libblas.so")) {
    *static_cast<std::string*>(out) = info->dlpi_name;
    return 1;
  }
  return 0;
}

}  // namespace

BlasInfo detect_blas() {
  BlasInfo info;
  std::string loaded;
  dl_iterate_phdr(find_libblas, &loaded);
  if (!loaded.empty()) {
    std::error_code ec;
    auto resolved = std::filesystem::canonical(loaded, ec);
    info.library = ec ? loaded : resolved.string();
  }
  info.is_openblas = dlsym(RTLD_DEFAULT, "openblas_get_config") != nullptr;
  // Debian installs the reference BLAS under .../blas/; OpenBLAS under .../openblas-*/.
  info.is_reference = !info.is_openblas && info.library.find("/blas/") != std::string::npos;
  return info;
}

void set_openblas_threads(int n) {
  using SetThreads = void (*)(int);
  if (auto fn = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) fn(n);
}

}  // namespace ptrain
