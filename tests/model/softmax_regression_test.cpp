#include "model/softmax_regression.hpp"

#include <gtest/gtest.h>


#include "data/synthetic.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

TEST(SoftmaxRegression, GradientMatchesFiniteDifferences) {
  Dataset data = make_gaussian_clusters(16, 5, 3, 7);
  SoftmaxRegression model(5, 3, 11);
  const Batch batch = test::first_samples(data, data.size());
  model.forward_backward(batch);
  std::vector<float> grad(model.grads().begin(), model.grads().end());
  auto params = model.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const float saved = params[i], h = 1e-2f;
    params[i] = saved + h;
    const double up = model.forward_backward(batch);
    params[i] = saved - h;
    const double down = model.forward_backward(batch);
    params[i] = saved;
    EXPECT_NEAR(grad[i], (up - down) / (2 * h), 2e-3) << "parameter " << i;
  }
}

TEST(SoftmaxRegression, LayoutCoversWeightAndBias) {
  SoftmaxRegression model(4, 3, 1);
  ASSERT_EQ(model.layout().segments().size(), 2u);
  EXPECT_EQ(model.layout().total(), 4u * 3u + 3u);
  EXPECT_EQ(model.params().size(), model.layout().total());
  EXPECT_EQ(model.grads().size(), model.layout().total());
}

}  // namespace
}  // namespace ptrain
