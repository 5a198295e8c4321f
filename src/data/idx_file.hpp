#pragma once
// Reader for IDX files (the MNIST / Fashion-MNIST format), gzipped or not.
// Every malformed input is a ptrain::Error whose message names the file and
// what is wrong: never a crash, never a silent short read.
#include <cstdint>
#include <string>
#include <vector>

namespace ptrain {

struct IdxArray {
  std::vector<uint32_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> data;   // product(dims) bytes, row-major
  size_t count() const { return dims.empty() ? 0 : dims[0]; }
};

// Far above any real IDX file (Fashion-MNIST's largest is 47 MB); a header that
// claims more is corrupt, and is refused before anything is allocated or inflated.
constexpr uint64_t kIdxMaxDataBytes = uint64_t{1} << 31;

// Reads an unsigned-byte IDX file (type code 0x08), a regular file only (a
// FIFO or device is refused without blocking). `expected_rank` is 1 for labels
// and 3 for images; a different rank is an error. A header declaring more than
// `max_data_bytes` (at most kIdxMaxDataBytes) is refused, saying `why_limited`.
IdxArray read_idx_ubyte(const std::string& path, size_t expected_rank, uint64_t max_data_bytes = kIdxMaxDataBytes,
                        const std::string& why_limited = "");

}  // namespace ptrain
