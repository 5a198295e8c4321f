#pragma once
// Which BLAS the process loaded. Debian's LibTorch links libblas.so.3, which is
// the slow reference BLAS unless OpenBLAS is the selected alternative.
#include <string>

namespace ptrain {

struct BlasInfo {
  std::string library;  // resolved path of the library that provides sgemm_, or "" if none
  bool is_openblas = false;
  bool is_reference = false;  // the netlib reference implementation
};

BlasInfo detect_blas();

// Limits OpenBLAS to n threads when OpenBLAS is loaded (no-op otherwise).
void set_openblas_threads(int n);

}  // namespace ptrain
