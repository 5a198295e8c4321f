#include "test_support.hpp"

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>

#include "data/synthetic.hpp"

namespace ptrain::test {

ScratchDir::ScratchDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("ptrain-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  if (!bytes.empty() && gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == 0)
    throw std::runtime_error("gzwrite failed for " + path);
  gzclose(f);
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data, uint8_t type) {
  std::vector<uint8_t> bytes = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(d >> shift));
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

FlatLayout layout_of(const std::vector<int64_t>& sizes) {
  FlatLayout layout;
  for (size_t i = 0; i < sizes.size(); ++i) layout.add("t" + std::to_string(i), {sizes[i]});
  return layout;
}

Batch first_samples(const Dataset& data, size_t n) {
  std::vector<size_t> which(n);
  std::iota(which.begin(), which.end(), 0);
  Batch batch;
  batch.gather(data, which);
  return batch;
}

Batch image_batch(size_t n, uint64_t seed) {
  Batch batch = first_samples(make_gaussian_clusters(n, 28 * 28, 10, seed), n);
  batch.sample_shape = {1, 28, 28};
  return batch;
}

}  // namespace ptrain::test
