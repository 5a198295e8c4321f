// Device names: what parses, what does not, and how "cuda" spreads workers.
#include "core/compute_device.hpp"

#include <gtest/gtest.h>

namespace ptrain {
namespace {

TEST(ComputeDevice, CpuCudaAndCudaNParseAndPrintBack) {
  for (const char* text : {"cpu", "cuda", "cuda:0", "cuda:7", "cuda:15"}) {
    const auto d = parse_compute_device(text);
    ASSERT_TRUE(d) << text;
    EXPECT_EQ(device_text(*d), text);
  }
  EXPECT_TRUE(parse_compute_device("cpu")->cpu());
  EXPECT_EQ(parse_compute_device("cuda")->index, -1);
  EXPECT_EQ(parse_compute_device("cuda:3")->index, 3);
}

TEST(ComputeDevice, AnythingElseIsRefused) {
  for (const char* text : {"", "gpu", "CUDA", "cuda:", "cuda:-1", "cuda:+1", "cuda:1x", "cuda:99999999999",
                           " cpu", "cpu:0", "cuda:0:1", "mps", "tpu"})
    EXPECT_FALSE(parse_compute_device(text)) << "'" << text << "'";
}

TEST(ComputeDevice, CudaSpreadsWorkersOverTheGpusAndCudaNPinsThem) {
  const ComputeDevice spread = *parse_compute_device("cuda");
  EXPECT_EQ(device_for_worker(spread, 0, 2).index, 0);
  EXPECT_EQ(device_for_worker(spread, 1, 2).index, 1);
  EXPECT_EQ(device_for_worker(spread, 5, 2).index, 1);
  EXPECT_EQ(device_for_worker(spread, 3, 1).index, 0);  // workers sharing one GPU
  const ComputeDevice pinned = *parse_compute_device("cuda:1");
  EXPECT_EQ(device_for_worker(pinned, 4, 2).index, 1);
  EXPECT_TRUE(device_for_worker(ComputeDevice{}, 3, 2).cpu());
}

}  // namespace
}  // namespace ptrain
