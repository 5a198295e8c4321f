#include "data/fashion_mnist.hpp"

#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <optional>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/memory_size.hpp"
#include "data/idx_file.hpp"

namespace ptrain {
namespace {

constexpr int kClasses = 10;

struct SplitFiles {
  const char* images;
  const char* labels;
};

SplitFiles file_names(Split split) {
  if (split == Split::Train) return {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"};
  return {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
}

// The file for `base` in `dir`: the gzipped one if present, else the plain one.
// One that is there but is no regular file (a FIFO, a device, a dangling
// symlink or a loop) is refused here, before any work.
std::optional<std::string> find_file(const std::string& dir, const std::string& base) {
  for (const std::string& name : {base + ".gz", base}) {
    const std::string candidate = (std::filesystem::path(dir) / name).string();
    struct stat st {};
    if (::lstat(candidate.c_str(), &st) != 0) continue;  // not there
    if (::stat(candidate.c_str(), &st) != 0) throw Error(candidate + ": cannot open: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw Error(candidate + ": is " + file_kind(st.st_mode) + ", not a regular file");
    return candidate;
  }
  return std::nullopt;
}

std::string require_file(const std::string& dir, const std::string& base) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(dir + ": Fashion-MNIST directory does not exist or is not a directory");
  if (auto path = find_file(dir, base)) return *path;
  throw Error(dir + ": missing " + base + "[.gz] (a Fashion-MNIST directory holds " +
              "{train,t10k}-{images-idx3,labels-idx1}-ubyte, gzipped or not)");
}

}  // namespace

void check_fashion_mnist_split(const std::string& dir, Split split) {
  const SplitFiles names = file_names(split);
  require_file(dir, names.images);
  require_file(dir, names.labels);
}

void check_fashion_mnist_dir(const std::string& dir) {
  for (Split split : {Split::Train, Split::Test}) check_fashion_mnist_split(dir, split);
}

Dataset load_fashion_mnist(const std::string& dir, Split split) {
  const SplitFiles names = file_names(split);
  const std::string images_path = require_file(dir, names.images);
  const std::string labels_path = require_file(dir, names.labels);

  // Each pixel is held as its byte and as a float: 5 bytes of memory.
  const uint64_t memory = memory_size_bytes();
  const IdxArray images = read_idx_ubyte(images_path, 3, memory / 5,
                                         "a fifth of the " + gib_text(static_cast<double>(memory)) +
                                             " of memory this machine has: each pixel is also held as a float");
  const IdxArray labels = read_idx_ubyte(labels_path, 1);
  if (images.count() != labels.count())
    throw Error(images_path + " holds " + std::to_string(images.count()) + " images but " + labels_path +
                " holds " + std::to_string(labels.count()) + " labels");

  std::vector<int64_t> label_values(labels.data.size());
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= kClasses)
      throw Error(labels_path + ": label " + std::to_string(labels.data[i]) + " at index " +
                  std::to_string(i) + " is outside [0, " + std::to_string(kClasses) + ")");
    label_values[i] = labels.data[i];
  }

  // A table gives the exact value of byte / 255.f without a division per pixel.
  std::array<float, 256> pixel_value{};
  for (size_t b = 0; b < pixel_value.size(); ++b) pixel_value[b] = static_cast<float>(b) / 255.f;
  std::vector<float> features(images.data.size());
  for (size_t i = 0; i < images.data.size(); ++i) features[i] = pixel_value[images.data[i]];

  const std::string name = split == Split::Train ? "fashion-mnist/train" : "fashion-mnist/test";
  return Dataset(name, {1, static_cast<int64_t>(images.dims[1]), static_cast<int64_t>(images.dims[2])},
                 std::move(features), std::move(label_values), kClasses);
}

Standardization fit_standardization(const Dataset& reference) {
  const auto values = reference.features();
  Standardization s;
  if (values.empty()) return s;
  // Two passes in double: the one-pass formula loses precision on 47M values.
  double sum = 0;
  for (float v : values) sum += v;
  const double mean = sum / static_cast<double>(values.size());
  double squares = 0;
  for (float v : values) squares += (v - mean) * (v - mean);
  const double stddev = std::sqrt(squares / static_cast<double>(values.size()));
  s.mean = static_cast<float>(mean);
  // A constant feature has no spread to divide by; leave its scale alone.
  s.stddev = static_cast<float>(stddev) > 0 ? static_cast<float>(stddev) : 1.0f;
  return s;
}

void apply_standardization(Dataset& data, Standardization s) {
  if (!(s.stddev > 0) || !std::isfinite(s.stddev) || !std::isfinite(s.mean))
    throw Error("data set '" + data.name() + "': standardization needs a finite mean and a " +
                "positive, finite standard deviation, got mean " + std::to_string(s.mean) +
                " and standard deviation " + std::to_string(s.stddev));
  for (float& v : data.mutable_features()) v = (v - s.mean) / s.stddev;
}

}  // namespace ptrain
