// Gradient accumulation on a LibTorch model, whose hook lets the all-reduce
// start during backward: the hook hears each segment once, during the last
// micro-batch, already holding the whole batch's gradient, and the bits are
// those of the same model without a hook.
#include <gtest/gtest.h>


#include "data/synthetic.hpp"
#include "model/microbatch_model.hpp"
#include "model/model_registry.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

TEST(MicrobatchModel, TheHookHearsEachSegmentOnceWithTheWholeGradientAndTheBitsAreThoseWithoutIt) {
  for (const char* name : {"mlp", "cnn"}) {
    auto hooked_inner = make_model({name, {64, 32}, 3}, {1, 28, 28}, 10);
    auto plain_inner = make_model({name, {64, 32}, 3}, {1, 28, 28}, 10);
    MicrobatchModel hooked(*hooked_inner, 4), plain(*plain_inner, 4);
    const auto& segments = hooked.layout().segments();
    std::vector<int> heard(segments.size(), 0);
    std::vector<std::vector<float>> seen(segments.size());
    ASSERT_TRUE(hooked.set_gradient_ready_hook([&](size_t s) {
      ++heard[s];
      auto g = hooked.grads().subspan(segments[s].offset, segments[s].numel);
      seen[s].assign(g.begin(), g.end());
    }));
    const Batch batch = test::image_batch(18, 5);  // micro-batches of 4, 5, 4 and 5
    EXPECT_EQ(hooked.forward_backward(batch), plain.forward_backward(batch)) << name;
    const auto a = hooked.grads(), b = plain.grads();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin())) << name;
    for (size_t s = 0; s < segments.size(); ++s) {
      EXPECT_EQ(heard[s], 1) << name << " " << segments[s].name;
      EXPECT_TRUE(std::equal(seen[s].begin(), seen[s].end(),
                             a.begin() + static_cast<std::ptrdiff_t>(segments[s].offset)))
          << name << " " << segments[s].name << ": the hook saw the final gradient";
    }
    // Close to the whole batch's gradient in one pass.
    auto whole = make_model({name, {64, 32}, 3}, {1, 28, 28}, 10);
    whole->forward_backward(batch);
    const auto w = whole->grads();
    double diff = 0, scale = 0;
    for (size_t i = 0; i < w.size(); ++i)
      diff = std::max(diff, std::abs(double(a[i]) - w[i])), scale = std::max(scale, std::abs(double(w[i])));
    EXPECT_LT(diff / scale, 1e-5) << name;
    hooked.set_gradient_ready_hook({});
  }
}

}  // namespace
}  // namespace ptrain
