// The sparse wire format and the magnitude selection that top-k and DGC share:
// layout and message checks, and the selections against brute force, in both
// the portable and the AVX2 compilation.
#include "compress/sparse_format.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "compress/magnitude_select.hpp"
#include "core/error.hpp"
#include "sample_gradients.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

// Runs `body` with the portable kernels, then (where the CPU has it) with AVX2.
template <typename Body>
void for_each_kernel(Body body) {
  set_sparse_kernels_portable(true);
  body("portable");
  set_sparse_kernels_portable(false);
  body(sparse_kernels_use_avx2() ? "avx2" : "portable (no avx2)");
}

TEST(SparseLayout, SplitsTheRangeIntoDenseAndSparseSpans) {
  const SparseLayout layout("dgc", 20, {{0, 3}, {5, 5}, {5, 8}, {15, 20}});
  EXPECT_EQ(layout.count(), 20u);
  EXPECT_EQ(layout.dense_count(), 11u);
  EXPECT_EQ(layout.sparse_count(), 9u);
  EXPECT_EQ(layout.dense(), (std::vector<IndexSpan>{{0, 3}, {5, 8}, {15, 20}}));
  EXPECT_EQ(layout.sparse(), (std::vector<IndexSpan>{{3, 5}, {8, 15}}));
  EXPECT_EQ(layout.message_bytes(7), 8u + 4u * 11 + 8u * 7);
}

TEST(SparseLayout, RejectsSpansOutOfOrderOrOutsideTheRangeNamingTheCodec) {
  for (const auto& spans :
       std::vector<std::vector<IndexSpan>>{{{0, 21}}, {{5, 8}, {2, 3}}, {{4, 6}, {5, 9}}, {{6, 4}}}) {
    const std::string message = test::error_message([&] { SparseLayout("dgc", 20, spans); });
    EXPECT_NE(message.find("dgc"), std::string::npos) << message;
    EXPECT_NE(message.find("1-D span"), std::string::npos) << message;
  }
  const std::string message =
      test::error_message([] { SparseLayout("topk", size_t{std::numeric_limits<uint32_t>::max()} + 1, {}); });
  EXPECT_NE(message.find("32-bit indices"), std::string::npos) << message;
}

TEST(SparseMessage, HasTheDocumentedLayoutAndPadsWithZeroPairs) {
  const SparseLayout layout("dgc", 10, {{2, 4}});
  Encoded e;
  SparseMessageWriter writer(e, layout, 3);
  writer.set_dense(0, 1.5f);
  writer.set_dense(1, -2.5f);
  writer.set_pair(0, 7, 3.25f);
  ASSERT_EQ(e.count, 10u);
  ASSERT_EQ(e.bytes.size(), 8u + 8 + 24);
  auto u32 = [&](size_t at) {
    uint32_t x;
    std::memcpy(&x, e.bytes.data() + at, 4);
    return x;
  };
  auto f32 = [&](size_t at) {
    float x;
    std::memcpy(&x, e.bytes.data() + at, 4);
    return x;
  };
  EXPECT_EQ(u32(0), 2u);  // dense floats
  EXPECT_EQ(u32(4), 3u);  // pairs
  EXPECT_EQ(f32(8), 1.5f);
  EXPECT_EQ(f32(12), -2.5f);
  EXPECT_EQ(u32(16), 7u);
  EXPECT_EQ(f32(20), 3.25f);
  for (size_t at = 24; at < 40; ++at) EXPECT_EQ(e.bytes[at], std::byte{0}) << at;  // padding

  std::vector<float> out(10, 1.0f);
  sparse_decode_add(e, layout, out, "dgc");
  EXPECT_EQ(out, (std::vector<float>{1, 1, 2.5f, -1.5f, 1, 1, 1, 4.25f, 1, 1}));
}

TEST(SparseMessage, DecodeRejectsMalformedMessagesLeavingTheOutputAlone) {
  const SparseLayout layout("topk", 10, {});
  Encoded good;
  SparseMessageWriter writer(good, layout, 2);
  writer.set_pair(0, 9, 1.0f);
  std::vector<float> out(10, 0.0f);

  Encoded bad_index = good;
  const uint32_t ten = 10;
  std::memcpy(bad_index.bytes.data() + 8 + 8, &ten, 4);
  EXPECT_NE(test::error_message([&] { sparse_decode_add(bad_index, layout, out, "topk"); }).find("index 10"),
            std::string::npos);
  EXPECT_EQ(out, std::vector<float>(10, 0.0f));

  Encoded short_message = good;
  short_message.bytes.resize(20);
  EXPECT_NE(test::error_message([&] { sparse_decode_add(short_message, layout, out, "topk"); }).find("bytes"),
            std::string::npos);
  Encoded tiny = good;
  tiny.bytes.resize(3);
  EXPECT_NE(test::error_message([&] { sparse_decode_add(tiny, layout, out, "topk"); }).find("header"),
            std::string::npos);
  Encoded wrong_count = good;
  wrong_count.count = 11;
  EXPECT_NE(test::error_message([&] { sparse_decode_add(wrong_count, layout, out, "topk"); }).find("11"),
            std::string::npos);
  std::vector<float> small(9);
  EXPECT_NE(test::error_message([&] { sparse_decode_add(good, layout, small, "topk"); }).find("9"),
            std::string::npos);
  const SparseLayout with_dense("topk", 10, {{0, 2}});
  EXPECT_NE(test::error_message([&] { sparse_decode_add(good, with_dense, out, "topk"); }).find("dense"),
            std::string::npos);
  EXPECT_EQ(out, std::vector<float>(10, 0.0f));
}

// The indices of the k largest |x| among `spans` (ties to the lower index),
// skipping zeros when asked, ascending.
std::vector<uint32_t> brute_top(const std::vector<float>& x, const std::vector<IndexSpan>& spans, size_t k,
                                bool skip_zeros) {
  std::vector<uint32_t> order;
  for (const auto& [b, e] : spans)
    for (size_t i = b; i < e; ++i)
      if (!skip_zeros || magnitude_key(x[i]) != 0) order.push_back(static_cast<uint32_t>(i));
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return magnitude_key(x[a]) > magnitude_key(x[b]); });
  order.resize(std::min(k, order.size()));
  std::sort(order.begin(), order.end());
  return order;
}

TEST(MagnitudeSelect, ExactCutIsTheTopKWithTiesToTheLowestIndex) {
  // Normal data; data with many ties and zeros; values across every exponent.
  std::vector<std::vector<float>> inputs = {test::normal_gradient(5000, 1)};
  std::vector<float> ties(5000);
  for (size_t i = 0; i < ties.size(); ++i) ties[i] = static_cast<float>(static_cast<int>(i * 7919 % 23) - 11);
  inputs.push_back(ties);
  std::vector<float> wide = test::cauchy_gradient(5000, 2);
  for (size_t i = 0; i < wide.size(); i += 7) wide[i] = std::ldexp(wide[i], static_cast<int>(i % 200) - 100);
  wide[3] = std::numeric_limits<float>::infinity();
  wide[4] = -std::numeric_limits<float>::denorm_min();
  inputs.push_back(wide);
  const std::vector<std::vector<IndexSpan>> span_sets = {{{0, 5000}},
                                                         {{10, 900}, {1000, 1003}, {1500, 4999}}};
  for_each_kernel([&](const char* kernel) {
    for (size_t input = 0; input < inputs.size(); ++input)
      for (const auto& spans : span_sets)
        for (const bool skip_zeros : {false, true})
          for (const size_t k : {size_t{1}, size_t{2}, size_t{17}, size_t{500}, size_t{4391}, size_t{6000}}) {
            const auto& x = inputs[input];
            const MagnitudeCut cut = exact_magnitude_cut(x, spans, k, skip_zeros);
            std::vector<uint32_t> got;
            append_cut_indices(x, spans, cut, got);
            const std::vector<uint32_t> expected = brute_top(x, spans, k, skip_zeros);
            EXPECT_EQ(got, expected) << kernel << " input " << input << " k " << k << " skip " << skip_zeros;
            EXPECT_EQ(cut.selected, expected.size());
          }
  });
}

TEST(MagnitudeSelect, ExactCutOfZerosSelectsNothingWhenSkippingThem) {
  const std::vector<float> zeros(100, 0.0f);
  const std::vector<IndexSpan> all = {{0, 100}};
  EXPECT_EQ(exact_magnitude_cut(zeros, all, 5, true).selected, 0u);
  const MagnitudeCut cut = exact_magnitude_cut(zeros, all, 5, false);
  std::vector<uint32_t> got;
  append_cut_indices(zeros, all, cut, got);
  EXPECT_EQ(got, (std::vector<uint32_t>{0, 1, 2, 3, 4}));
}

TEST(MagnitudeSelect, CollectCountsEverythingAtOrAboveTheKeyAndKeepsTheFirstFew) {
  const std::vector<float> x = test::student_t2_gradient(10007, 3);
  const std::vector<IndexSpan> spans = {{0, 4000}, {4003, 10007}};
  const uint32_t min_key = magnitude_key(2.0f);
  std::vector<uint32_t> expected;
  for (const auto& [b, e] : spans)
    for (size_t i = b; i < e; ++i)
      if (magnitude_key(x[i]) >= min_key) expected.push_back(static_cast<uint32_t>(i));
  ASSERT_GT(expected.size(), 100u);
  for_each_kernel([&](const char* kernel) {
    std::vector<uint32_t> got;
    EXPECT_EQ(collect_at_least(x, spans, min_key, 1 << 20, got), expected.size()) << kernel;
    EXPECT_EQ(got, expected) << kernel;
    got.clear();
    EXPECT_EQ(collect_at_least(x, spans, min_key, 50, got), expected.size()) << kernel;
    EXPECT_EQ(got, std::vector<uint32_t>(expected.begin(), expected.begin() + 50)) << kernel;
  });
}

TEST(MagnitudeSelect, SelectLargestAmongCandidates) {
  const std::vector<float> x = test::normal_gradient(3000, 4);
  std::vector<uint32_t> candidates;
  for (uint32_t i = 0; i < 3000; i += 3) candidates.push_back(i);
  std::vector<uint32_t> keys, got;
  select_largest(x, candidates, 37, keys, got);
  std::vector<IndexSpan> spans;
  for (const uint32_t c : candidates) spans.emplace_back(c, c + 1);
  EXPECT_EQ(got, brute_top(x, spans, 37, false));
  select_largest(x, candidates, 5000, keys, got);
  EXPECT_EQ(got, candidates);
}

}  // namespace
}  // namespace ptrain
