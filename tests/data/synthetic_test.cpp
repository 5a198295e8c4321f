#include "data/synthetic.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "data/random_subset.hpp"
#include "model/softmax_regression.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

TEST(Synthetic, ShapesAndBalancedLabels) {
  const Dataset data = make_gaussian_clusters(100, 7, 4, 42);
  EXPECT_EQ(data.size(), 100u);
  EXPECT_EQ(data.sample_shape(), (std::vector<int64_t>{7}));
  EXPECT_EQ(data.sample_numel(), 7u);
  EXPECT_EQ(data.num_classes(), 4);
  std::vector<int> per_class(4, 0);
  for (int64_t label : data.labels()) ++per_class[static_cast<size_t>(label)];
  EXPECT_EQ(per_class, (std::vector<int>{25, 25, 25, 25}));
  for (float v : data.features()) EXPECT_TRUE(std::isfinite(v));
}

TEST(Synthetic, DeterministicFromSeed) {
  const Dataset a = make_gaussian_clusters(50, 3, 5, 7);
  const Dataset b = make_gaussian_clusters(50, 3, 5, 7);
  const Dataset c = make_gaussian_clusters(50, 3, 5, 8);
  EXPECT_TRUE(std::equal(a.features().begin(), a.features().end(), b.features().begin()));
  EXPECT_TRUE(std::equal(a.labels().begin(), a.labels().end(), b.labels().begin()));
  EXPECT_FALSE(std::equal(a.features().begin(), a.features().end(), c.features().begin()));
}

TEST(Synthetic, SamplesClusterAroundTheirClassCentre) {
  // With no spread every sample is exactly its class centre.
  const Dataset exact = make_gaussian_clusters(20, 2, 3, 1, 0.0f);
  for (size_t i = 3; i < exact.size(); ++i)
    for (size_t f = 0; f < 2; ++f) EXPECT_EQ(exact.sample(i)[f], exact.sample(i % 3)[f]);

  // With spread 0.5 (same seed, so same centres) the noise around each centre
  // has that standard deviation.
  const Dataset noisy = make_gaussian_clusters(6000, 2, 3, 1, 0.5f);
  double sum = 0, squares = 0;
  for (size_t i = 0; i < noisy.size(); ++i)
    for (size_t f = 0; f < 2; ++f) {
      const double d = noisy.sample(i)[f] - exact.sample(i % 3)[f];
      sum += d;
      squares += d * d;
    }
  const double n = 2.0 * static_cast<double>(noisy.size());
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(std::sqrt(squares / n), 0.5, 0.03);
}

TEST(Synthetic, RejectsBadArguments) {
  EXPECT_THROW(make_gaussian_clusters(10, 0, 2, 1), Error);
  EXPECT_THROW(make_gaussian_clusters(10, 3, 0, 1), Error);
  EXPECT_THROW(make_gaussian_clusters(10, 3, 2, 1, -1.0f), Error);
  EXPECT_THROW(make_gaussian_clusters(10, 3, 2, 1, NAN), Error);
}

}  // namespace
}  // namespace ptrain

namespace ptrain {
namespace {

TEST(RandomSubset, FixedBySeedWithoutRepeatsInOriginalOrder) {
  const Dataset data = make_gaussian_clusters(200, 3, 4, 1);
  const Dataset a = random_subset(data, 50, 7), b = random_subset(data, 50, 7), c = random_subset(data, 50, 8);
  ASSERT_EQ(a.size(), 50u);
  EXPECT_EQ(a.labels().size(), 50u);
  EXPECT_TRUE(std::equal(a.features().begin(), a.features().end(), b.features().begin()));
  EXPECT_FALSE(std::equal(a.features().begin(), a.features().end(), c.features().begin()));
  // Every sample is one of the set's, each at most once, in the set's order.
  size_t from = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    while (from < data.size() && !std::equal(a.sample(i).begin(), a.sample(i).end(), data.sample(from).begin())) ++from;
    ASSERT_LT(from, data.size()) << "sample " << i;
    EXPECT_EQ(a.label(i), data.label(from));
    ++from;
  }
  EXPECT_EQ(random_subset(data, 0, 1).size(), 200u);
  EXPECT_EQ(random_subset(data, 500, 1).size(), 200u);
}

}  // namespace
}  // namespace ptrain

namespace ptrain {
namespace {

TEST(TokenSequences, TargetsAreTheNextTokensAndTheSetIsALanguageModellingTask) {
  const Dataset data = make_token_sequences(50, 12, 17, 3, 0.0f);
  EXPECT_EQ(data.size(), 50u);
  EXPECT_EQ(data.task(), Task::LanguageModel);
  EXPECT_EQ(data.label_shape(), (std::vector<int64_t>{12}));
  EXPECT_EQ(data.label_numel(), 12u);
  for (size_t i = 0; i < data.size(); ++i) {
    const auto x = data.sample(i);
    const auto y = data.targets(i);
    for (size_t p = 0; p + 1 < 12; ++p) EXPECT_EQ(static_cast<int64_t>(x[p + 1]), y[p]);  // the next token
  }
  // The same seed, the same sequences; a prefix keeps its targets.
  const Dataset again = make_token_sequences(50, 12, 17, 3, 0.0f);
  EXPECT_TRUE(std::equal(data.labels().begin(), data.labels().end(), again.labels().begin()));
  const Dataset head = data.head(5);
  EXPECT_EQ(head.size(), 5u);
  EXPECT_EQ(head.labels().size(), 60u);
  Batch batch;
  const std::vector<size_t> picks = {4, 1};
  batch.gather(data, picks);
  EXPECT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch.labels.size(), 24u);
  EXPECT_EQ(batch.labels[12], data.targets(1)[0]);
  EXPECT_THROW(make_token_sequences(5, 0, 10, 1), Error);
}

TEST(TokenSequences, TheSoftmaxModelRefusesThem) {
  ModelInput input{{12}, 17, {12}, 1};
  EXPECT_NE(test::error_message([&] { SoftmaxOptions{}.make(input); }).find("one label per sample"),
            std::string::npos);
}

}  // namespace
}  // namespace ptrain
