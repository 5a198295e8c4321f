// Top-k sparsification: the exact top k, the fixed message size, and error
// feedback's conservation of what was not sent.
#include "compress/codec_registry.hpp"
#include "compress/topk_codec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "sample_gradients.hpp"

namespace ptrain {
namespace {

TopkOptions topk_config(double ratio, bool error_feedback) {
  TopkOptions c;
  c.ratio = ratio;
  c.error_feedback = error_feedback;
  return c;
}

// The (index, value) pairs of a message without a dense part.
std::vector<std::pair<uint32_t, float>> topk_pairs_of(const Encoded& e) {
  uint32_t dense = 0, k = 0;
  std::memcpy(&dense, e.bytes.data(), 4);
  std::memcpy(&k, e.bytes.data() + 4, 4);
  EXPECT_EQ(dense, 0u);
  std::vector<std::pair<uint32_t, float>> pairs(k);
  for (size_t p = 0; p < k; ++p) {
    std::memcpy(&pairs[p].first, e.bytes.data() + 8 + 8 * p, 4);
    std::memcpy(&pairs[p].second, e.bytes.data() + 12 + 8 * p, 4);
  }
  return pairs;
}

TEST(TopkCodec, SendsExactlyTheKLargestMagnitudes) {
  const size_t n = 100003;
  const std::vector<float> g = test::normal_gradient(n, 11);  // continuous: no ties
  TopkCodec codec(topk_config(0.01, false), test::whole_range(n));
  ASSERT_EQ(codec.k(), 1000u);
  const Encoded e = codec.encode(g, StepInfo{});
  EXPECT_EQ(e.count, n);
  EXPECT_EQ(e.bytes.size(), codec.message_bytes());
  EXPECT_EQ(e.bytes.size(), 8u + 8 * 1000);

  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return std::abs(g[a]) > std::abs(g[b]); });
  order.resize(1000);
  std::sort(order.begin(), order.end());
  const auto pairs = topk_pairs_of(e);
  ASSERT_EQ(pairs.size(), 1000u);
  for (size_t p = 0; p < pairs.size(); ++p) {
    EXPECT_EQ(pairs[p].first, order[p]);
    EXPECT_EQ(pairs[p].second, g[order[p]]);
  }
  std::vector<float> out(n, 0.0f);
  codec.decode_add(e, out);
  for (size_t i = 0; i < n; ++i)
    EXPECT_EQ(out[i], std::binary_search(order.begin(), order.end(), i) ? g[i] : 0.0f) << i;
  EXPECT_EQ(codec.stats().selected, 1000u);
  EXPECT_EQ(codec.stats().dense_bytes, 4 * n);
  EXPECT_EQ(codec.stats().encoded_bytes, e.bytes.size());
  EXPECT_TRUE(codec.residual().empty());
}

TEST(TopkCodec, KIsAtLeastOneAndAtMostTheCount) {
  EXPECT_EQ(TopkCodec(topk_config(0.01, true), test::whole_range(10)).k(), 1u);
  EXPECT_EQ(TopkCodec(topk_config(0.25, true), test::whole_range(10)).k(), 3u);  // round(2.5) = 3
  EXPECT_EQ(TopkCodec(topk_config(1.0, true), test::whole_range(10)).k(), 10u);
  EXPECT_EQ(TopkCodec(topk_config(0.5, true), test::whole_range(0)).k(), 0u);
}

TEST(TopkCodec, TiesGoToTheLowestIndices) {
  const std::vector<float> g = {1, -3, 3, 2, -3, 3, 0};
  TopkCodec codec(topk_config(3.0 / 7, false), test::whole_range(7));
  const auto pairs = topk_pairs_of(codec.encode(g, StepInfo{}));
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0], (std::pair<uint32_t, float>{1, -3.0f}));
  EXPECT_EQ(pairs[1], (std::pair<uint32_t, float>{2, 3.0f}));
  EXPECT_EQ(pairs[2], (std::pair<uint32_t, float>{4, -3.0f}));
}

TEST(TopkCodec, ErrorFeedbackConservesMassExactly) {
  const size_t n = 20000;
  TopkCodec codec(topk_config(0.02, true), test::whole_range(n));
  std::vector<float> accumulated(n, 0.0f);  // residual before the step + the gradient, as the codec adds
  std::vector<float> total_sent(n, 0.0f), total_grad(n, 0.0f);
  for (size_t step = 0; step < 25; ++step) {
    const std::vector<float> g = test::normal_gradient(n, 100 + step, step % 2 ? 1.0f : 0.01f);
    for (size_t i = 0; i < n; ++i) accumulated[i] = codec.residual()[i] + g[i];
    const Encoded e = codec.encode(g, StepInfo{.step = step});
    ASSERT_EQ(e.bytes.size(), codec.message_bytes());
    std::vector<float> sent(n, 0.0f);
    codec.decode_add(e, sent);
    for (size_t i = 0; i < n; ++i) {
      // Either sent whole and gone from the residual, or kept whole.
      ASSERT_TRUE(sent[i] == 0.0f || codec.residual()[i] == 0.0f) << i;
      ASSERT_EQ(sent[i] + codec.residual()[i], accumulated[i]) << "step " << step << " element " << i;
    }
  }
  EXPECT_EQ(codec.stats().selected, 25u * 400);
}

TEST(TopkCodec, WithoutErrorFeedbackEachStepStandsAlone) {
  const size_t n = 5000;
  TopkCodec codec(topk_config(0.1, false), test::whole_range(n));
  const std::vector<float> big = test::normal_gradient(n, 5, 10.0f);
  codec.encode(big, StepInfo{});
  const std::vector<float> small = test::normal_gradient(n, 6);
  std::vector<float> out(n, 0.0f);
  codec.decode_add(codec.encode(small, StepInfo{.step = 1}), out);
  for (size_t i = 0; i < n; ++i) EXPECT_TRUE(out[i] == 0.0f || out[i] == small[i]) << i;
}

TEST(TopkCodec, RejectsAGradientOfTheWrongSize) {
  TopkCodec codec(topk_config(0.1, true), test::whole_range(10));
  const std::vector<float> g(11);
  try {
    codec.encode(g, StepInfo{});
    FAIL() << "did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("11"), std::string::npos) << e.what();
  }
}

TEST(TopkCodec, IsWhatMakeCodecBuilds) {
  const auto codec = make_codec(CodecConfig{topk_config(0.01, true)}, test::whole_range(1000), 3);
  ASSERT_NE(codec, nullptr);
  EXPECT_EQ(codec->name(), "topk");
  EXPECT_FALSE(codec->applies_momentum());
  EXPECT_FALSE(codec->summable_as_half());
}

}  // namespace
}  // namespace ptrain
