// Deep Gradient Compression: the sampled threshold's selection on several
// gradient shapes, each switchable part (accumulation, momentum correction,
// clipping, masking, warm-up, dense 1-D tensors), and a sparse exchange among
// workers simulated by decoding every worker's message into one buffer.
#include "compress/dgc_codec.hpp"
#include "core/rng.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compress/magnitude_select.hpp"
#include "core/error.hpp"
#include "sample_gradients.hpp"

// The test's own momentum must round twice, as the codec does.
#if defined(__GNUC__) && !defined(__clang__)
#define TEST_NO_CONTRACTION gnu::optimize("fp-contract=off")
#else
#define TEST_NO_CONTRACTION
#endif

namespace ptrain {
namespace {

struct Pair {
  uint32_t index;
  float value;
};

DgcConfig dgc_config(double density) {
  DgcConfig c;
  c.density = density;
  return c;
}

// Worker `worker`'s codec, seeded as make_codec seeds it for a run with seed 1.
std::unique_ptr<Codec> make_codec(const DgcConfig& c, const CodecRange& range, int worker) {
  return std::make_unique<DgcCodec>(c, range, derive_seed(1, 1000 + static_cast<uint64_t>(worker)));
}

std::vector<Pair> pairs_of(const Encoded& e) {
  uint32_t dense = 0, k = 0;
  std::memcpy(&dense, e.bytes.data(), 4);
  std::memcpy(&k, e.bytes.data() + 4, 4);
  std::vector<Pair> pairs(k);
  for (size_t p = 0; p < k; ++p) {
    std::memcpy(&pairs[p].index, e.bytes.data() + 8 + 4 * dense + 8 * p, 4);
    std::memcpy(&pairs[p].value, e.bytes.data() + 12 + 4 * dense + 8 * p, 4);
  }
  return pairs;
}

std::vector<float> decoded(const Codec& codec, const Encoded& e) {
  std::vector<float> out(e.count, 0.0f);
  codec.decode_add(e, out);
  return out;
}

[[TEST_NO_CONTRACTION]] void momentum_step(std::vector<float>& u, const std::vector<float>& g, float m) {
  for (size_t i = 0; i < u.size(); ++i) {
    const float decayed = m * u[i];
    u[i] = decayed + g[i];
  }
}

// ---- (f) warm-up

TEST(DgcDensity, FallsThroughFourStagesOfTheWarmUpThenHoldsTheTarget) {
  DgcConfig c;
  c.density = 0.001;
  c.warmup_epochs = 4;
  EXPECT_EQ(dgc_density(c, 0.0), 0.25);
  EXPECT_EQ(dgc_density(c, 0.999), 0.25);
  EXPECT_EQ(dgc_density(c, 1.0), 0.0625);
  EXPECT_EQ(dgc_density(c, 1.5), 0.0625);
  EXPECT_EQ(dgc_density(c, 2.0), 0.015625);
  EXPECT_EQ(dgc_density(c, 2.99), 0.015625);
  EXPECT_EQ(dgc_density(c, 3.0), 0.00390625);  // the paper's "99.6% sparsity": 0.4%
  EXPECT_EQ(dgc_density(c, 3.999), 0.00390625);
  EXPECT_EQ(dgc_density(c, 4.0), 0.001);
  EXPECT_EQ(dgc_density(c, 100.0), 0.001);
  c.warmup_epochs = 1;  // stages of a quarter epoch
  EXPECT_EQ(dgc_density(c, 0.2), 0.25);
  EXPECT_EQ(dgc_density(c, 0.25), 0.0625);
  EXPECT_EQ(dgc_density(c, 0.5), 0.015625);
  EXPECT_EQ(dgc_density(c, 0.75), 0.00390625);
  EXPECT_EQ(dgc_density(c, 1.0), 0.001);
  c.warmup_epochs = 0;
  EXPECT_EQ(dgc_density(c, 0.0), 0.001);
  c.warmup_epochs = 4;
  c.density = 0.02;  // a target denser than the last stages: never below it
  EXPECT_EQ(dgc_density(c, 2.5), 0.02);
  EXPECT_EQ(dgc_density(c, 1.5), 0.0625);
}

TEST(DgcCodec, WarmsUpWhileTheDensityIsAboveTheTarget) {
  DgcConfig c = dgc_config(0.02);
  c.warmup_epochs = 4;
  const DgcCodec codec(c, test::whole_range(1000), 1);
  EXPECT_TRUE(codec.warming_up(StepInfo{.epoch = 0}));
  EXPECT_TRUE(codec.warming_up(StepInfo{.epoch = 1.9}));
  EXPECT_FALSE(codec.warming_up(StepInfo{.epoch = 2}));  // 1.5625% < 2%: the target already
  EXPECT_FALSE(codec.warming_up(StepInfo{.epoch = 4}));
  EXPECT_FALSE(DgcCodec(dgc_config(0.001), test::whole_range(1000), 1).warming_up(StepInfo{}));
}

TEST(DgcCodec, MessageSizeFollowsTheWarmUpAndIsTheSameOnEveryWorker) {
  DgcConfig c = dgc_config(0.001);
  c.warmup_epochs = 4;
  const size_t n = 100000;
  const CodecRange range{.count = n, .one_dim = {{0, 100}}};
  auto a = make_codec(c, range, 0), b = make_codec(c, range, 5);
  const std::vector<float> g = test::normal_gradient(n, 1);
  const double epochs[] = {0, 1, 2, 3, 4, 7.5};
  const size_t expected_pairs[] = {24975, 6244, 1561, 390, 100, 100};  // round(d * 99900)
  for (size_t s = 0; s < 6; ++s) {
    const StepInfo step{.step = s, .epoch = epochs[s]};
    auto* dgc = dynamic_cast<DgcCodec*>(a.get());
    ASSERT_NE(dgc, nullptr);
    EXPECT_EQ(dgc->pairs(step), expected_pairs[s]) << epochs[s];
    const Encoded ea = a->encode(g, step), eb = b->encode(test::normal_gradient(n, 2 + s), step);
    EXPECT_EQ(ea.bytes.size(), 8 + 4 * 100 + 8 * expected_pairs[s]);
    EXPECT_EQ(eb.bytes.size(), ea.bytes.size());
    EXPECT_EQ(dgc->message_bytes(step), ea.bytes.size());
  }
}

// ---- (a) the sampled threshold

// Runs a few steps of `gradient(step)` through DGC without momentum
// correction (so v before sending is v + g) and checks every selection: within
// [0.8 k, k] elements (a message holds k), and nothing left behind larger than
// anything sent.
template <typename Gradient>
void check_selection(const char* shape, Gradient gradient, size_t n, double density, size_t steps) {
  DgcConfig c = dgc_config(density);
  c.momentum_correction = false;
  DgcCodec codec(c, test::whole_range(n), 7);
  for (size_t s = 0; s < steps; ++s) {
    const std::vector<float> g = gradient(s);
    std::vector<float> before(n);
    for (size_t i = 0; i < n; ++i) before[i] = codec.velocity()[i] + g[i];
    const StepInfo step{.step = s};
    const size_t k = codec.pairs(step);
    const Encoded e = codec.encode(g, step);
    ASSERT_EQ(e.bytes.size(), codec.message_bytes(step));
    const size_t selected = codec.last_selected();
    EXPECT_GE(5 * selected, 4 * k) << shape << " step " << s << ": " << selected << " of k = " << k;
    EXPECT_LE(selected, k) << shape;
    const std::vector<Pair> pairs = pairs_of(e);
    std::vector<bool> sent(n, false);
    uint32_t smallest_sent = 0xFFFFFFFFu;
    for (size_t p = 0; p < selected; ++p) {
      ASSERT_LT(pairs[p].index, n);
      ASSERT_FALSE(sent[pairs[p].index]) << "sent twice";
      if (p > 0) {
        ASSERT_GT(pairs[p].index, pairs[p - 1].index) << "indices ascend";
      }
      sent[pairs[p].index] = true;
      ASSERT_EQ(pairs[p].value, before[pairs[p].index]);
      smallest_sent = std::min(smallest_sent, magnitude_key(pairs[p].value));
    }
    for (size_t p = selected; p < pairs.size(); ++p) {
      EXPECT_EQ(pairs[p].index, 0u);
      EXPECT_EQ(pairs[p].value, 0.0f);
    }
    uint32_t largest_kept = 0;
    for (size_t i = 0; i < n; ++i) {
      if (sent[i]) {
        ASSERT_EQ(codec.velocity()[i], 0.0f);
      } else {
        ASSERT_EQ(codec.velocity()[i], before[i]);
        largest_kept = std::max(largest_kept, magnitude_key(before[i]));
      }
    }
    EXPECT_LE(largest_kept, smallest_sent) << shape << " step " << s;
  }
  ::testing::Test::RecordProperty(std::string(shape) + "_refinements",
                                  std::to_string(codec.stats().refinements));
}

TEST(DgcCodec, SampledThresholdSelectsNearKOnNormalGradients) {
  const size_t n = 1 << 18;
  check_selection(
      "normal", [&](size_t s) { return test::normal_gradient(n, 10 + s); }, n, 0.001, 8);
  check_selection(
      "normal, 1%", [&](size_t s) { return test::normal_gradient(n, 20 + s); }, n, 0.01, 4);
}

TEST(DgcCodec, SampledThresholdSelectsNearKOnHeavyTailedGradients) {
  const size_t n = 1 << 18;
  check_selection(
      "cauchy", [&](size_t s) { return test::cauchy_gradient(n, 30 + s); }, n, 0.001, 6);
  check_selection(
      "student-t(2)", [&](size_t s) { return test::student_t2_gradient(n, 40 + s); }, n, 0.001, 6);
}

TEST(DgcCodec, SampledThresholdSelectsNearKOnNearlyConstantGradients) {
  const size_t n = 1 << 18;
  check_selection(
      "nearly constant", [&](size_t s) { return test::nearly_constant_gradient(n, 50 + s); }, n, 0.001, 6);
  check_selection(
      "constant", [&](size_t) { return std::vector<float>(n, 0.5f); }, n, 0.001, 3);
  // Two values: a few large among many equal small ones.
  check_selection(
      "two levels",
      [&](size_t s) {
        std::vector<float> g(n, 1.0f);
        for (size_t i = s; i < n; i += 1500) g[i] = -4.0f;
        return g;
      },
      n, 0.001, 3);
}

// The selection the header describes, computed the long way for a first step
// (v = g): the stratified sample drawn with a division per stratum, its j-th
// largest key as the threshold, every element counted against it. The
// codec's one pass (a rising bound, candidates filtered) must send the same.
std::vector<uint32_t> reference_selection(const std::vector<float>& g, const DgcConfig& c, uint64_t seed, size_t k) {
  const size_t n = g.size();
  const size_t samples = std::max<size_t>(c.min_samples, static_cast<size_t>(std::ceil(c.sample_fraction * static_cast<double>(n))));
  Rng rng(derive_seed(seed, 0));
  std::vector<uint32_t> keys;
  for (size_t s = 0; s < samples; ++s) {
    const size_t lo = s * n / samples, hi = (s + 1) * n / samples;
    keys.push_back(magnitude_key(g[lo + rng.below(hi - lo)]));
  }
  const size_t j = std::clamp<size_t>(
      static_cast<size_t>(std::llround(static_cast<double>(k) * static_cast<double>(samples) / static_cast<double>(n))), 1,
      samples);
  std::sort(keys.begin(), keys.end(), std::greater<>());
  const uint32_t threshold = std::max(keys[j - 1], 1u);
  std::vector<uint32_t> at_least;
  for (size_t i = 0; i < n; ++i)
    if (magnitude_key(g[i]) >= threshold) at_least.push_back(static_cast<uint32_t>(i));
  EXPECT_GE(5 * at_least.size(), 4 * k) << "the reference needs no refinement";
  if (at_least.size() <= k) return at_least;
  // More than k: the k largest, ties to the lowest indices.
  const std::vector<IndexSpan> all = {{0, n}};
  std::vector<uint32_t> largest;
  append_cut_indices(g, all, exact_magnitude_cut(g, all, k, true), largest);
  return largest;
}

TEST(DgcCodec, OnePassSelectsWhatTheSampledThresholdSelects) {
  const size_t n = 1 << 20;
  std::vector<std::pair<std::string, std::vector<float>>> gradients = {
      {"normal", test::normal_gradient(n, 61)}, {"cauchy", test::cauchy_gradient(n, 62)}};
  // Few distinct values: many keys tie with the threshold and with the bound.
  std::vector<float> levels(n);
  for (size_t i = 0; i < n; ++i) levels[i] = static_cast<float>((i * 7919) % 4001) * 0.125f - 250.0f;
  gradients.emplace_back("few levels", levels);
  // Growing along the range: the bound from the sample seen so far trails the threshold.
  std::vector<float> ramp = test::normal_gradient(n, 63);
  for (size_t i = 0; i < n; ++i) ramp[i] *= static_cast<float>(i) / static_cast<float>(n);
  gradients.emplace_back("ramp", ramp);
  for (const double density : {0.001, 0.01}) {
    for (const auto& [shape, g] : gradients) {
      for (const bool portable : {false, true}) {
        DgcConfig c = dgc_config(density);
        c.momentum_correction = false;
        set_sparse_kernels_portable(portable);
        DgcCodec codec(c, test::whole_range(n), 5);
        const Encoded e = codec.encode(g, StepInfo{});
        set_sparse_kernels_portable(false);
        const std::vector<uint32_t> expected = reference_selection(g, c, 5, codec.pairs(StepInfo{}));
        const auto pairs = pairs_of(e);
        ASSERT_EQ(codec.last_selected(), expected.size()) << shape << " density " << density;
        for (size_t p = 0; p < expected.size(); ++p) {
          ASSERT_EQ(pairs[p].index, expected[p]) << shape << " density " << density << " pair " << p;
          ASSERT_EQ(pairs[p].value, g[expected[p]]) << shape << " density " << density << " pair " << p;
        }
      }
    }
  }
}

TEST(DgcCodec, SelectsAtLeastOneElementOfAnAllZeroGradient) {
  const size_t n = 1 << 16;
  for (const double density : {0.001, 0.5}) {
    DgcCodec codec(dgc_config(density), test::whole_range(n), 1);
    const std::vector<float> zeros(n, 0.0f);
    const Encoded e = codec.encode(zeros, StepInfo{});
    EXPECT_GE(codec.last_selected(), 1u);
    EXPECT_EQ(e.bytes.size(), codec.message_bytes(StepInfo{}));
    EXPECT_EQ(decoded(codec, e), zeros);
  }
}

TEST(DgcCodec, NeverSendsZerosWhileAnythingIsNonzero) {
  const size_t n = 1 << 18;
  std::vector<float> g(n, 0.0f);
  for (size_t i = 17; i < n; i += 4001) g[i] = static_cast<float>(i % 7) - 3.5f;  // 66 nonzeros, k = 262
  DgcCodec codec(dgc_config(0.001), test::whole_range(n), 1);
  const Encoded e = codec.encode(g, StepInfo{});
  EXPECT_EQ(codec.last_selected(), 66u);
  EXPECT_EQ(decoded(codec, e), g);
}

TEST(DgcCodec, SmallRangesSelectExactly) {
  // Fewer elements than min_samples: the sample would be all of them.
  const size_t n = 3000;
  const std::vector<float> g = test::normal_gradient(n, 3);
  DgcConfig c = dgc_config(0.01);
  c.momentum_correction = false;
  DgcCodec codec(c, test::whole_range(n), 1);
  const Encoded e = codec.encode(g, StepInfo{});
  EXPECT_EQ(codec.last_selected(), 30u);
  const MagnitudeCut cut = exact_magnitude_cut(g, std::vector<IndexSpan>{{0, n}}, 30, true);
  std::vector<uint32_t> expected;
  append_cut_indices(g, std::vector<IndexSpan>{{0, n}}, cut, expected);
  const auto pairs = pairs_of(e);
  for (size_t p = 0; p < 30; ++p) EXPECT_EQ(pairs[p].index, expected[p]);
  EXPECT_EQ(codec.stats().refinements, 0u);
}

// ---- (b), (c), (e): accumulation, momentum correction, masking

TEST(DgcCodec, FullDensityWithMomentumCorrectionAndNoMaskingIsMomentumSgd) {
  const size_t n = 4099;
  const float lr = 0.05f, m = 0.9f;
  for (const bool with_one_dim : {false, true}) {
    DgcConfig c = dgc_config(1.0);
    c.momentum = m;
    c.momentum_masking = false;
    const CodecRange range{
        .count = n,
        .one_dim = with_one_dim ? std::vector<IndexSpan>{{0, 10}, {2000, 2100}} : std::vector<IndexSpan>{}};
    const auto codec = make_codec(c, range, 0);
    ASSERT_TRUE(codec->applies_momentum());
    std::vector<float> w_codec = test::normal_gradient(n, 99), w_ref = w_codec, v_ref(n, 0.0f);
    for (size_t s = 0; s < 60; ++s) {
      const std::vector<float> g = test::normal_gradient(n, 1000 + s, s < 30 ? 1.0f : 1e-3f);
      const std::vector<float> sent = decoded(*codec, codec->encode(g, StepInfo{.step = s}));
      for (size_t i = 0; i < n; ++i) w_codec[i] -= lr * sent[i];  // plain SGD on what arrives
      momentum_step(v_ref, g, m);
      for (size_t i = 0; i < n; ++i) w_ref[i] -= lr * v_ref[i];
      ASSERT_EQ(sent, v_ref) << "step " << s;
      ASSERT_EQ(w_codec, w_ref) << "step " << s;
    }
  }
}

TEST(DgcCodec, WithoutMomentumCorrectionFullDensitySendsTheGradient) {
  const size_t n = 5000;
  DgcConfig c = dgc_config(1.0);
  c.momentum_correction = false;
  DgcCodec codec(c, test::whole_range(n), 1);
  EXPECT_FALSE(codec.applies_momentum());
  EXPECT_TRUE(codec.momentum().empty());
  for (size_t s = 0; s < 3; ++s) {
    const std::vector<float> g = test::normal_gradient(n, s);
    EXPECT_EQ(decoded(codec, codec.encode(g, StepInfo{.step = s})), g);
  }
}

TEST(DgcCodec, MomentumCorrectionAccumulatesTheVelocityAndConservesIt) {
  const size_t n = 50000;
  for (const bool masking : {true, false}) {
    DgcConfig c = dgc_config(0.01);
    c.momentum_masking = masking;
    DgcCodec codec(c, test::whole_range(n), 3);
    for (size_t s = 0; s < 6; ++s) {
      const std::vector<float> g = test::normal_gradient(n, 300 + s);
      std::vector<float> u(codec.momentum().begin(), codec.momentum().end());
      momentum_step(u, g, c.momentum);
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = codec.velocity()[i] + u[i];
      const std::vector<float> sent = decoded(codec, codec.encode(g, StepInfo{.step = s}));
      size_t sent_count = 0;
      for (size_t i = 0; i < n; ++i) {
        if (sent[i] != 0.0f) {
          ++sent_count;
          ASSERT_EQ(sent[i], v[i]);
          ASSERT_EQ(codec.velocity()[i], 0.0f);
          // (e) masking zeros the momentum too; without it only v is cleared.
          ASSERT_EQ(codec.momentum()[i], masking ? 0.0f : u[i]) << "masking " << masking;
        } else {
          ASSERT_EQ(codec.velocity()[i], v[i]);
          ASSERT_EQ(codec.momentum()[i], u[i]);
        }
      }
      EXPECT_EQ(sent_count, codec.last_selected());
      EXPECT_GE(sent_count, 400u);
    }
  }
}

TEST(DgcCodec, WithoutAccumulationWhatIsNotSentIsDropped) {
  const size_t n = 20000;
  for (const bool accumulation : {true, false}) {
    DgcConfig c = dgc_config(0.01);
    c.momentum_correction = false;
    c.accumulation = accumulation;
    DgcCodec codec(c, test::whole_range(n), 3);
    const std::vector<float> g1 = test::normal_gradient(n, 1), g2 = test::normal_gradient(n, 2);
    const std::vector<float> first = decoded(codec, codec.encode(g1, StepInfo{}));
    const std::vector<float> second = decoded(codec, codec.encode(g2, StepInfo{.step = 1}));
    size_t carried = 0;
    for (size_t i = 0; i < n; ++i) {
      if (second[i] == 0.0f) continue;
      const float expected = accumulation && first[i] == 0.0f ? g1[i] + g2[i] : g2[i];
      ASSERT_EQ(second[i], expected) << i;
      carried += expected != g2[i];
    }
    if (accumulation) {
      EXPECT_GT(carried, 0u);
    }
  }
}

// ---- (d) clipping

TEST(DgcCodec, ClipsTheGradientToClipNormOverRootN) {
  const size_t n = 1000;
  const std::vector<float> g = test::normal_gradient(n, 8);  // norm about 31.6
  double sum = 0;
  for (const float x : g) sum += static_cast<double>(x) * x;
  const double norm = std::sqrt(sum);
  for (const int workers : {1, 4, 16}) {
    DgcConfig c = dgc_config(1.0);
    c.momentum_correction = false;
    c.clip_norm = 8.0;
    DgcCodec codec(c, test::whole_range(n), 1);
    const std::vector<float> sent = decoded(codec, codec.encode(g, StepInfo{.workers = workers}));
    const double limit = 8.0 / std::sqrt(static_cast<double>(workers));
    const float scale = static_cast<float>(limit / norm);
    double sent_sum = 0;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_FLOAT_EQ(sent[i], g[i] * scale) << workers;
      sent_sum += static_cast<double>(sent[i]) * sent[i];
    }
    EXPECT_NEAR(std::sqrt(sent_sum), limit, 1e-5 * limit) << workers;
  }
  // Below the threshold: untouched.
  DgcConfig c = dgc_config(1.0);
  c.momentum_correction = false;
  c.clip_norm = 2 * norm;
  DgcCodec codec(c, test::whole_range(n), 1);
  EXPECT_EQ(decoded(codec, codec.encode(g, StepInfo{.workers = 4})), g);  // limit = norm: not above it
  EXPECT_THROW(codec.encode(g, StepInfo{.workers = 0}), Error);
}

// ---- (g) dense 1-D tensors

TEST(DgcCodec, SendsOneDimensionalRangesDenseAndExactly) {
  const size_t n = 30000;
  const std::vector<IndexSpan> one_dim = {{0, 7}, {100, 110}, {29990, 30000}};
  for (const bool momentum : {true, false}) {
    DgcConfig c = dgc_config(0.001);
    c.momentum_correction = momentum;
    DgcCodec codec(c, CodecRange{.count = n, .one_dim = one_dim}, 1);
    EXPECT_EQ(codec.layout().dense_count(), 27u);
    std::vector<float> u(n, 0.0f);
    for (size_t s = 0; s < 5; ++s) {
      const std::vector<float> g = test::normal_gradient(n, 70 + s, 0.1f);
      momentum_step(u, g, c.momentum);
      const Encoded e = codec.encode(g, StepInfo{.step = s});
      EXPECT_EQ(e.bytes.size(), 8u + 4 * 27 + 8 * 30);  // k = round(0.001 * 29973)
      const std::vector<float> sent = decoded(codec, e);
      for (const auto& [b, end] : one_dim)
        for (size_t i = b; i < end; ++i) ASSERT_EQ(sent[i], momentum ? u[i] : g[i]) << i;
      for (const Pair& p : pairs_of(e))
        for (const auto& [b, end] : one_dim)
          if (p.value != 0.0f) {
            EXPECT_FALSE(p.index >= b && p.index < end) << p.index;
          }
    }
  }
  // Switched off, the 1-D ranges are sparsified like the rest.
  DgcConfig c = dgc_config(0.001);
  c.dense_one_dim = false;
  DgcCodec codec(c, CodecRange{.count = n, .one_dim = one_dim}, 1);
  EXPECT_EQ(codec.layout().dense_count(), 0u);
  EXPECT_EQ(codec.encode(test::normal_gradient(n, 1), StepInfo{}).bytes.size(), 8u + 8 * 30);
}

// ---- the exchange

TEST(DgcCodec, SparseExchangeSumsWhatEveryWorkerSent) {
  const size_t n = 40000;
  const CodecRange range{.count = n, .one_dim = {{1000, 1064}, {39000, 39100}}};
  DgcConfig c = dgc_config(0.005);
  c.warmup_epochs = 2;
  for (int workers = 1; workers <= 8; ++workers) {
    std::vector<std::unique_ptr<Codec>> codecs;
    for (int w = 0; w < workers; ++w) codecs.push_back(make_codec(c, range, w));
    for (size_t s = 0; s < 6; ++s) {
      const StepInfo step{.step = s, .epoch = 0.5 * static_cast<double>(s), .workers = workers};
      std::vector<Encoded> messages;
      for (int w = 0; w < workers; ++w)
        messages.push_back(codecs[static_cast<size_t>(w)]->encode(
            test::normal_gradient(n, 1000 * s + static_cast<size_t>(w)), step));
      // Fixed size: every worker's message has the size known in advance.
      const size_t size = dynamic_cast<DgcCodec&>(*codecs[0]).message_bytes(step);
      for (const Encoded& e : messages) ASSERT_EQ(e.bytes.size(), size) << workers << " workers, step " << s;
      // Every message decoded by one codec into one buffer (the all-gather's
      // receiver) equals the sum of what each worker's own message holds.
      std::vector<float> all(n, 0.0f), sum(n, 0.0f);
      for (const Encoded& e : messages) codecs[0]->decode_add(e, all);
      for (int w = 0; w < workers; ++w) {
        const std::vector<float> own =
            decoded(*codecs[static_cast<size_t>(w)], messages[static_cast<size_t>(w)]);
        for (size_t i = 0; i < n; ++i) sum[i] += own[i];
      }
      ASSERT_EQ(all, sum) << workers << " workers, step " << s;
    }
  }
}

// ---- determinism, kernels, errors

std::vector<Encoded> run_steps(const DgcConfig& c, const CodecRange& range, int worker, size_t steps) {
  const auto codec = make_codec(c, range, worker);
  std::vector<Encoded> out;
  for (size_t s = 0; s < steps; ++s)
    out.push_back(
        codec->encode(test::normal_gradient(range.count, 500 + s), StepInfo{.step = s, .workers = 2}));
  return out;
}

bool same(const std::vector<Encoded>& a, const std::vector<Encoded>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].bytes != b[i].bytes) return false;
  return true;
}

TEST(DgcCodec, IsDeterministicAndBothKernelsAgree) {
  const CodecRange range{.count = 300001, .one_dim = {{5, 9}}};
  for (const bool momentum : {true, false})
    for (const bool accumulation : {true, false}) {
      DgcConfig c = dgc_config(0.002);
      c.momentum_correction = momentum;
      c.accumulation = accumulation;
      c.clip_norm = 100;
      const auto first = run_steps(c, range, 2, 4);
      EXPECT_TRUE(same(first, run_steps(c, range, 2, 4)));
      set_sparse_kernels_portable(true);
      const auto portable = run_steps(c, range, 2, 4);
      set_sparse_kernels_portable(false);
      EXPECT_TRUE(same(first, portable)) << "momentum " << momentum << " accumulation " << accumulation;
    }
}

TEST(DgcCodec, RejectsBadInputNamingIt) {
  DgcCodec codec(dgc_config(0.01), test::whole_range(100), 1);
  try {
    codec.encode(std::vector<float>(99), StepInfo{});
    FAIL() << "did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("99"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DgcCodec(dgc_config(0.01), CodecRange{.count = 100, .one_dim = {{50, 101}}}, 1), Error);
  EXPECT_THROW(DgcCodec(dgc_config(0.0), test::whole_range(100), 1), Error);
  // A top-k message is not a DGC message when DGC sends 1-D tensors dense.
  DgcCodec with_dense(dgc_config(0.01), CodecRange{.count = 100, .one_dim = {{0, 10}}}, 1);
  const Encoded e = codec.encode(std::vector<float>(100, 1.0f), StepInfo{});
  std::vector<float> out(100);
  EXPECT_THROW(with_dense.decode_add(e, out), Error);
}

}  // namespace
}  // namespace ptrain
