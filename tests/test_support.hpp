#pragma once
// Small helpers shared by the tests: scratch directories and files.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <functional>
#include <iterator>

#include "core/dataset.hpp"
#include "core/error.hpp"
#include "core/flat_layout.hpp"
#include "plan/strategy_registry.hpp"

namespace ptrain::test {

// A fresh directory under the system temp dir, removed with everything in it
// when the object goes out of scope.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes);
std::vector<uint8_t> read_bytes(const std::string& path);
// An IDX file's bytes (Fashion-MNIST's format): magic with `type` (0x08:
// unsigned bytes), big-endian dims, then the data.
std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data,
                               uint8_t type = 0x08);
// A layout of one-dimensional tensors t0, t1, ... of these sizes.
FlatLayout layout_of(const std::vector<int64_t>& sizes);
// The first `n` samples of a data set, as one batch.
Batch first_samples(const Dataset& data, size_t n);
// `n` Gaussian-cluster samples of 10 classes (seed `seed`) shaped as 1x28x28 images, as one batch.
Batch image_batch(size_t n, uint64_t seed);
// How many entries a directory holds (what a failed write must not leave behind).
inline size_t entries_in(const std::filesystem::path& dir) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
}

// The message of the ptrain::Error that `action` throws; fails the test if it
// throws nothing or something else.
template <typename Action>
std::string error_message(Action action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  } catch (...) {
    ADD_FAILURE() << "threw something other than ptrain::Error";
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

// The strategy registered as `name`, with `servers` shards where it has any,
// its fields then changed by `tweak`.
inline StrategyFactory named_strategy(const std::string& name, int servers = 1,
                                      const std::function<void(StrategyChoice&)>& tweak = {}) {
  auto s = StrategyRegistry::make(name);
  if (!s) throw Error("no strategy " + name);
  std::visit(
      [&](auto& o) {
        if constexpr (requires { o.servers; }) o.servers = servers;
      },
      *s);
  if (tweak) tweak(*s);
  return strategy_factory_of(*s);
}

// Where Debian's dataset-fashion-mnist package puts the real data.
inline const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

}  // namespace ptrain::test
