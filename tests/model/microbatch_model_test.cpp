// Gradient accumulation: a step of M micro-batches is the share-weighted sum
// of the micro-batches' gradients, taken through the model it wraps, close to
// the whole batch's; the hook path gives the same bits as the one without.
#include "model/microbatch_model.hpp"

#include <gtest/gtest.h>


#include "data/synthetic.hpp"
#include "model/softmax_regression.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

std::vector<float> grads_of(Model& model) { return {model.grads().begin(), model.grads().end()}; }

TEST(MicrobatchModel, OneMicroBatchIsTheModelItself) {
  const Dataset data = make_gaussian_clusters(12, 5, 3, 7);
  const Batch batch = test::first_samples(data, 12);
  SoftmaxRegression plain(5, 3, 11), inner(5, 3, 11);
  MicrobatchModel wrapped(inner, 1);
  EXPECT_EQ(wrapped.forward_backward(batch), plain.forward_backward(batch));
  EXPECT_EQ(grads_of(wrapped), grads_of(plain));
}

TEST(MicrobatchModel, SumsTheMicroBatchesGradientsWeightedByTheirShare) {
  const Dataset data = make_gaussian_clusters(10, 5, 3, 7);
  const Batch batch = test::first_samples(data, 10);  // three micro-batches of 3, 3 and 4 samples
  SoftmaxRegression reference(5, 3, 11), inner(5, 3, 11);
  MicrobatchModel wrapped(inner, 3);
  const float loss = wrapped.forward_backward(batch);

  // By hand, in the same order: the earlier ones summed, then the last added.
  const size_t bounds[] = {0, 3, 6, 10};
  std::vector<float> earlier(reference.grads().size(), 0.0f), last;
  double expected_loss = 0;
  float last_share = 0;
  Batch part;
  for (size_t k = 0; k < 3; ++k) {
    batch.slice_into(bounds[k], bounds[k + 1], part);
    const float share = static_cast<float>(bounds[k + 1] - bounds[k]) / 10.0f;
    expected_loss += static_cast<double>(share) * reference.forward_backward(part);
    if (k < 2) {
      for (size_t i = 0; i < earlier.size(); ++i) earlier[i] += share * reference.grads()[i];
    } else {
      last = grads_of(reference), last_share = share;
    }
  }
  std::vector<float> expected(earlier.size());
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = last_share * last[i] + earlier[i];
  EXPECT_EQ(grads_of(wrapped), expected);
  EXPECT_EQ(loss, static_cast<float>(expected_loss));

  // And the whole batch's gradient, up to rounding.
  SoftmaxRegression whole(5, 3, 11);
  EXPECT_NEAR(whole.forward_backward(batch), loss, 1e-6);
  const auto full = grads_of(whole);
  for (size_t i = 0; i < full.size(); ++i)
    EXPECT_NEAR(grads_of(wrapped)[i], full[i], 1e-6) << "element " << i;
}

TEST(MicrobatchModel, ABatchSmallerThanTheMicroBatchesIsRefused) {
  const Dataset data = make_gaussian_clusters(8, 5, 3, 7);
  SoftmaxRegression inner(5, 3, 11);
  MicrobatchModel wrapped(inner, 4);
  EXPECT_EQ(test::error_message([&] { wrapped.forward_backward(test::first_samples(data, 3)); }),
            "a batch of 3 sample(s) cannot be split into 4 micro-batches");
}

TEST(BatchSlice, HoldsTheSamplesOfTheRangeAndRefusesOneOutside) {
  const Dataset data = make_gaussian_clusters(6, 4, 2, 3);
  const Batch batch = test::first_samples(data, 6);
  Batch part;
  batch.slice_into(2, 5, part);
  EXPECT_EQ(part.size(), 3u);
  EXPECT_EQ(part.indices, (std::vector<size_t>{2, 3, 4}));
  EXPECT_EQ(part.features, std::vector<float>(batch.features.begin() + 8, batch.features.begin() + 20));
  EXPECT_EQ(part.labels, std::vector<int64_t>(batch.labels.begin() + 2, batch.labels.begin() + 5));
  EXPECT_EQ(test::error_message([&] { batch.slice_into(4, 7, part); }),
            "batch: samples [4, 7) of a batch of 6");
}

}  // namespace
}  // namespace ptrain
