#include "data/fashion_mnist.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/data_registry.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::ScratchDir;

using test::idx_bytes;

// A small fake Fashion-MNIST split: `images` 4x3 images, `labels` labels.
void write_split(const ScratchDir& dir, const std::string& prefix, uint32_t images,
                 std::vector<uint8_t> labels, bool gzip) {
  std::vector<uint8_t> pixels(images * 4 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37);
  const auto image_file = idx_bytes({images, 4, 3}, pixels);
  const auto label_file = idx_bytes({static_cast<uint32_t>(labels.size())}, labels);
  const std::string suffix = gzip ? ".gz" : "";
  auto write = gzip ? test::write_gzip : test::write_bytes;
  write(dir.file(prefix + "-images-idx3-ubyte" + suffix), image_file);
  write(dir.file(prefix + "-labels-idx1-ubyte" + suffix), label_file);
}

std::vector<uint8_t> cycling_labels(size_t n) {
  std::vector<uint8_t> labels(n);
  for (size_t i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>(i % 10);
  return labels;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

bool contains(const std::string& text, const std::string& word) {
  return text.find(word) != std::string::npos;
}

TEST(FashionMnist, LoadsSmallFakeDirectoryPlainAndGzip) {
  ScratchDir dir;
  write_split(dir, "train", 12, cycling_labels(12), /*gzip=*/false);
  write_split(dir, "t10k", 5, cycling_labels(5), /*gzip=*/true);
  EXPECT_NO_THROW(check_fashion_mnist_dir(dir.path().string()));

  const Dataset train = load_fashion_mnist(dir.path().string(), Split::Train);
  EXPECT_EQ(train.name(), "fashion-mnist/train");
  EXPECT_EQ(train.size(), 12u);
  EXPECT_EQ(train.sample_shape(), (std::vector<int64_t>{1, 4, 3}));
  EXPECT_EQ(train.num_classes(), 10);
  EXPECT_EQ(train.label(11), 1);
  EXPECT_FLOAT_EQ(train.sample(0)[1], 37.f / 255.f);

  const Dataset test_split = load_fashion_mnist(dir.path().string(), Split::Test);
  EXPECT_EQ(test_split.name(), "fashion-mnist/test");
  EXPECT_EQ(test_split.size(), 5u);
}

TEST(FashionMnist, MismatchedCountsNameBothFiles) {
  ScratchDir dir;
  write_split(dir, "train", 12, cycling_labels(11), /*gzip=*/false);
  const std::string message = error_of([&] { load_fashion_mnist(dir.path().string(), Split::Train); });
  EXPECT_TRUE(contains(message, dir.file("train-images-idx3-ubyte"))) << message;
  EXPECT_TRUE(contains(message, dir.file("train-labels-idx1-ubyte"))) << message;
  EXPECT_TRUE(contains(message, "12 images")) << message;
  EXPECT_TRUE(contains(message, "11 labels")) << message;
}

TEST(FashionMnist, LabelOutOfRangeNamesFileIndexAndValue) {
  ScratchDir dir;
  auto labels = cycling_labels(8);
  labels[6] = 10;
  write_split(dir, "t10k", 8, labels, /*gzip=*/true);
  const std::string message = error_of([&] { load_fashion_mnist(dir.path().string(), Split::Test); });
  EXPECT_EQ(message.rfind(dir.file("t10k-labels-idx1-ubyte.gz"), 0), 0u) << message;
  EXPECT_TRUE(contains(message, "label 10")) << message;
  EXPECT_TRUE(contains(message, "index 6")) << message;
}

TEST(FashionMnist, MissingFileIsNamed) {
  ScratchDir dir;
  write_split(dir, "train", 3, cycling_labels(3), /*gzip=*/true);
  write_split(dir, "t10k", 3, cycling_labels(3), /*gzip=*/false);
  std::filesystem::remove(dir.file("t10k-labels-idx1-ubyte"));
  const std::string dir_name = dir.path().string();

  std::string message = error_of([&] { check_fashion_mnist_dir(dir_name); });
  EXPECT_TRUE(contains(message, dir_name)) << message;
  EXPECT_TRUE(contains(message, "missing t10k-labels-idx1-ubyte")) << message;

  message = error_of([&] { load_fashion_mnist(dir_name, Split::Test); });
  EXPECT_TRUE(contains(message, "missing t10k-labels-idx1-ubyte")) << message;
  // The other split is complete and still loads.
  EXPECT_EQ(load_fashion_mnist(dir_name, Split::Train).size(), 3u);

  message = error_of([&] { check_fashion_mnist_dir(dir.file("no-such-dir")); });
  EXPECT_TRUE(contains(message, dir.file("no-such-dir"))) << message;
  EXPECT_TRUE(contains(message, "does not exist")) << message;
}

// Found by tools/bad_inputs.sh: a FIFO among the files hung the check and the
// load; the check refuses it (and a device, a directory, a dangling link)
// before any work.
TEST(FashionMnist, AFileThatIsNoRegularFileIsRefusedByTheCheck) {
  ScratchDir dir;
  write_split(dir, "train", 3, cycling_labels(3), /*gzip=*/false);
  write_split(dir, "t10k", 3, cycling_labels(3), /*gzip=*/false);
  const std::string images = dir.file("train-images-idx3-ubyte");
  std::filesystem::remove(images);
  ASSERT_EQ(::mkfifo(images.c_str(), 0600), 0);
  std::string message = error_of([&] { check_fashion_mnist_dir(dir.path().string()); });
  EXPECT_EQ(message, images + ": is a FIFO (named pipe), not a regular file");
  message = error_of([&] { load_fashion_mnist(dir.path().string(), Split::Train); });
  EXPECT_EQ(message, images + ": is a FIFO (named pipe), not a regular file");
  std::filesystem::remove(images);
  std::filesystem::create_symlink("/dev/zero", images);
  EXPECT_EQ(error_of([&] { check_fashion_mnist_dir(dir.path().string()); }),
            images + ": is a character device, not a regular file");
  std::filesystem::remove(images);
  std::filesystem::create_symlink("nowhere", images);
  EXPECT_TRUE(contains(error_of([&] { check_fashion_mnist_dir(dir.path().string()); }), images + ": cannot open"));
}

// Found by tools/bad_inputs.sh: 27x27 test images with 28x28 training ones
// were read past their end (softmax: exit 0 at 9%).
TEST(FashionMnist, TestImagesOfAnotherShapeAreRefusedNamingTheDirectory) {
  ScratchDir dir;
  write_split(dir, "train", 3, cycling_labels(3), /*gzip=*/false);
  const std::vector<uint8_t> pixels(3 * 3 * 3, 7);
  test::write_bytes(dir.file("t10k-images-idx3-ubyte"), idx_bytes({3, 3, 3}, pixels));
  test::write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_bytes({3}, cycling_labels(3)));
  FashionMnistOptions options;
  options.dir = dir.path().string();
  EXPECT_EQ(error_of([&] { options.load(); }),
            "data.dir: " + options.dir + ": the test set's samples have shape [1, 3, 3], the training set's [1, 4, 3]");
}

TEST(FashionMnist, StandardizationGivesZeroMeanUnitVariance) {
  ScratchDir dir;
  write_split(dir, "train", 20, cycling_labels(20), /*gzip=*/false);
  Dataset train = load_fashion_mnist(dir.path().string(), Split::Train);
  const Standardization s = fit_standardization(train);
  EXPECT_GT(s.stddev, 0.f);
  apply_standardization(train, s);
  double sum = 0, squares = 0;
  for (float v : train.features()) sum += v;
  const double mean = sum / static_cast<double>(train.features().size());
  for (float v : train.features()) squares += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 0.0, 1e-5);
  EXPECT_NEAR(std::sqrt(squares / static_cast<double>(train.features().size())), 1.0, 1e-5);
}

TEST(FashionMnist, StandardizationOfConstantDataKeepsScale) {
  Dataset constant("constant", {2}, {0.5f, 0.5f, 0.5f, 0.5f}, {0, 1}, 2);
  const Standardization s = fit_standardization(constant);
  EXPECT_FLOAT_EQ(s.mean, 0.5f);
  EXPECT_FLOAT_EQ(s.stddev, 1.0f);
  apply_standardization(constant, s);
  for (float v : constant.features()) EXPECT_EQ(v, 0.f);
  EXPECT_THROW(apply_standardization(constant, {0.f, 0.f}), Error);
}

TEST(FashionMnist, RealDatasetLoads) {
  if (!std::filesystem::is_directory(test::kFashionMnistDir))
    GTEST_SKIP() << test::kFashionMnistDir << " is absent (Debian package dataset-fashion-mnist)";
  check_fashion_mnist_dir(test::kFashionMnistDir);
  const Dataset train = load_fashion_mnist(test::kFashionMnistDir, Split::Train);
  const Dataset test_split = load_fashion_mnist(test::kFashionMnistDir, Split::Test);
  EXPECT_EQ(train.size(), 60000u);
  EXPECT_EQ(test_split.size(), 10000u);
  for (const Dataset* data : {&train, &test_split}) {
    EXPECT_EQ(data->sample_shape(), (std::vector<int64_t>{1, 28, 28}));
    const auto [lo, hi] = std::minmax_element(data->features().begin(), data->features().end());
    EXPECT_EQ(*lo, 0.f);
    EXPECT_EQ(*hi, 1.f);
    const std::set<int64_t> classes(data->labels().begin(), data->labels().end());
    EXPECT_EQ(classes.size(), 10u);
    EXPECT_EQ(*classes.begin(), 0);
    EXPECT_EQ(*classes.rbegin(), 9);
  }
}

}  // namespace
}  // namespace ptrain
