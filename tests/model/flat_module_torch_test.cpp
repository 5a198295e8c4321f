#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"
#include "data/synthetic.hpp"
#include "model/torch/flat_module.hpp"
#include "model/model_registry.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

FlatModule& as_flat(Model& m) { return dynamic_cast<FlatModule&>(m); }

TEST(FlatModule, ParametersAreViewsIntoTheFlatBuffer) {
  for (const char* name : {"mlp", "cnn"}) {
    auto model = make_model({name, {128}, 1}, {1, 28, 28}, 10);
    auto params = model->params();
    size_t covered = 0;
    for (const auto& p : as_flat(*model).module()->parameters()) {
      const float* data = p.data_ptr<float>();
      EXPECT_GE(data, params.data());
      EXPECT_LE(data + p.numel(), params.data() + params.size());
      covered += static_cast<size_t>(p.numel());
    }
    EXPECT_EQ(covered, params.size()) << name;
    EXPECT_EQ(model->layout().total(), params.size());
  }
}

TEST(FlatModule, BackwardWritesGradientsIntoTheFlatBuffer) {
  for (const char* name : {"mlp", "cnn"}) {
    auto model = make_model({name, {64, 32}, 3}, {1, 28, 28}, 10);
    auto reference = make_model({name, {64, 32}, 3}, {1, 28, 28}, 10);
    const Batch batch = test::image_batch(16, 4);
    const float loss = model->forward_backward(batch);
    // The same computation through plain tensors: every .grad matches its flat slice.
    FlatModule& flat = as_flat(*reference);
    const auto& net = flat.module();
    auto x = torch::from_blob(const_cast<float*>(batch.features.data()), {16, 1, 28, 28}).clone();
    auto y = torch::from_blob(const_cast<int64_t*>(batch.labels.data()), {16}, torch::kInt64).clone();
    auto ref_loss = torch::nn::functional::cross_entropy(flat.forward(x), y);
    for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();  // fresh .grad tensors
    ref_loss.backward();
    EXPECT_FLOAT_EQ(loss, ref_loss.item<float>());
    auto grads = model->grads();
    for (const auto& seg : model->layout().segments()) {
      auto ref_grad = net->named_parameters()[seg.name].grad().contiguous();
      for (size_t i = 0; i < seg.numel; ++i)
        ASSERT_NEAR(grads[seg.offset + i], ref_grad.data_ptr<float>()[i], 1e-6) << name << " " << seg.name;
    }
    // A second step overwrites the gradients, it does not add to them.
    model->forward_backward(batch);
    for (const auto& seg : model->layout().segments()) {
      auto ref_grad = net->named_parameters()[seg.name].grad().contiguous();
      ASSERT_NEAR(grads[seg.offset], ref_grad.data_ptr<float>()[0], 1e-6) << name << " " << seg.name;
    }
  }
}

// The hook that lets communication overlap backward: each gradient is
// reported once, already final, and the layers nearest the loss come first.
TEST(FlatModule, ReportsEachGradientOnceWhenItIsFinalLastLayersFirst) {
  for (const char* name : {"mlp", "cnn"}) {
    auto model = make_model({name, {64, 32}, 3}, {1, 28, 28}, 10);
    const auto& segments = model->layout().segments();
    std::vector<size_t> order;
    std::vector<std::vector<float>> seen(segments.size());
    ASSERT_TRUE(model->set_gradient_ready_hook([&](size_t s) {
      order.push_back(s);
      auto g = model->grads().subspan(segments[s].offset, segments[s].numel);
      seen[s].assign(g.begin(), g.end());
    }));
    const Batch batch = test::image_batch(8, 2);
    for (int step = 0; step < 2; ++step) {  // the hooks survive from one backward to the next
      order.clear();
      model->forward_backward(batch);
      ASSERT_EQ(order.size(), segments.size()) << name;
      std::vector<size_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      for (size_t s = 0; s < sorted.size(); ++s) ASSERT_EQ(sorted[s], s) << name << ": each segment once";
      // Layer by layer (weight and bias in either order), from the last to the first.
      for (size_t k = 1; k < order.size(); ++k) EXPECT_LE(order[k] / 2, order[k - 1] / 2) << name;
      for (size_t s = 0; s < segments.size(); ++s) {
        auto g = model->grads().subspan(segments[s].offset, segments[s].numel);
        EXPECT_TRUE(std::equal(g.begin(), g.end(), seen[s].begin())) << name << " " << segments[s].name;
      }
    }
    model->set_gradient_ready_hook({});
    model->forward_backward(batch);  // no hook: nothing is called
  }
}

TEST(FlatModule, AnUpdateThroughTheFlatBufferChangesTheOutput) {
  auto model = make_model({"mlp", {32}, 5}, {1, 28, 28}, 10);
  const Batch batch = test::image_batch(8, 2);
  const float before = model->forward_backward(batch);
  auto params = model->params();
  auto grads = model->grads();
  for (size_t i = 0; i < params.size(); ++i) params[i] -= 0.5f * grads[i];
  const float after = model->forward_backward(batch);
  EXPECT_LT(after, before);
  for (float& p : params) p = 0;
  EXPECT_NEAR(model->forward_backward(batch), std::log(10.0f), 1e-5);  // all-zero weights: uniform output
}

TEST(FlatModule, SameSeedSameInitialWeights) {
  auto a = make_model({"cnn", {}, 8}, {1, 28, 28}, 10);
  auto b = make_model({"cnn", {}, 8}, {1, 28, 28}, 10);
  auto c = make_model({"cnn", {}, 9}, {1, 28, 28}, 10);
  EXPECT_TRUE(std::equal(a->params().begin(), a->params().end(), b->params().begin()));
  EXPECT_FALSE(std::equal(a->params().begin(), a->params().end(), c->params().begin()));
}

// Staged (the GPU path's buffers, on the CPU): params() and grads() are host
// copies apart from the module's own; an update to params() reaches the next
// pass, evaluation moves nothing that counts as a step's, and no gradient is
// announced before the whole backward pass has been copied out.
TEST(FlatModule, StagedBuffersAreHostCopiesThatReachTheModuleEachPass) {
  for (const char* name : {"mlp", "cnn"}) {
    const ModelChoice choice = std::string(name) == "mlp" ? ModelChoice(MlpOptions{{32}}) : ModelChoice(CnnOptions{});
    ModelInput in{{1, 28, 28}, 10, {}, 3};
    auto plain = make_model(choice, in);
    in.device.staged = true;
    auto staged = make_model(choice, in);
    EXPECT_FALSE(staged->set_gradient_ready_hook([](size_t) {})) << name;
    ASSERT_EQ(staged->params().size(), plain->params().size());
    EXPECT_TRUE(std::equal(staged->params().begin(), staged->params().end(), plain->params().begin())) << name;
    const float* module_data = as_flat(*staged).module()->parameters().front().data_ptr<float>();
    EXPECT_TRUE(module_data < staged->params().data() || module_data >= staged->params().data() + staged->params().size())
        << name << ": staged parameters must live apart from the module's";
    const Batch batch = test::image_batch(8, 5);
    for (int step = 0; step < 2; ++step) {
      EXPECT_EQ(staged->forward_backward(batch), plain->forward_backward(batch)) << name;
      EXPECT_TRUE(std::equal(staged->grads().begin(), staged->grads().end(), plain->grads().begin())) << name;
      // The same update on both: the staged one must carry it into its next pass.
      for (size_t i = 0; i < plain->params().size(); ++i) {
        plain->params()[i] -= 0.1f * plain->grads()[i];
        staged->params()[i] -= 0.1f * staged->grads()[i];
      }
    }
    const DeviceTraffic before = staged->device_traffic();
    const Dataset flat = make_gaussian_clusters(50, 28 * 28, 10, 9);
    const Dataset test("images", {1, 28, 28}, {flat.features().begin(), flat.features().end()},
                       {flat.labels().begin(), flat.labels().end()}, 10);
    const Metrics a = staged->evaluate(test), b = plain->evaluate(test);
    EXPECT_EQ(a.loss, b.loss) << name;
    EXPECT_EQ(a.accuracy, b.accuracy) << name;
    const DeviceTraffic after = staged->device_traffic();
    EXPECT_EQ(after.to_device_bytes, before.to_device_bytes) << name;
    EXPECT_EQ(after.steps, 2u) << name;
    EXPECT_EQ(after.to_host_bytes, 2 * staged->params().size() * sizeof(float)) << name;
  }
}

// A pipeline stage's replica keeps its layers alone: their parameters, bound
// to buffers of their own with the values the whole model had, and nothing
// of the others'; it runs its stage and refuses whole passes.
TEST(FlatModule, KeepingLayersFreesTheOthersAndKeepsTheirValues) {
  for (const char* name : {"mlp", "cnn"}) {
    auto whole = make_model({name, {64, 32}, 3}, {1, 28, 28}, 10);
    auto kept = make_model({name, {64, 32}, 3}, {1, 28, 28}, 10);
    std::string why_not;
    const std::vector<ModelLayer> layers = whole->layers(why_not);
    ASSERT_GE(layers.size(), 3u) << name;
    const auto& segments = whole->layout().segments();
    const size_t from = segments[layers[1].first_segment].offset;
    const FlatSegment& last = segments[layers[2].first_segment + layers[2].segments - 1];
    const size_t count = last.offset + last.numel - from;

    ASSERT_TRUE(kept->keep_layers(1, 3)) << name;
    ASSERT_EQ(kept->params().size(), count) << name;
    EXPECT_EQ(kept->layout().total(), count) << name;
    EXPECT_EQ(kept->layout().segments().size(), layers[1].segments + layers[2].segments) << name;
    EXPECT_TRUE(std::equal(kept->params().begin(), kept->params().end(), whole->params().begin() + from)) << name;
    // The layers still read as the whole model's, so that a stage is named as before.
    EXPECT_EQ(kept->layers(why_not).size(), layers.size()) << name;
    size_t held = 0;
    for (const auto& p : as_flat(*kept).module()->parameters()) {
      held += static_cast<size_t>(p.numel());
      if (p.numel() == 0) continue;
      const float* data = p.data_ptr<float>();
      EXPECT_GE(data, kept->params().data()) << name;
      EXPECT_LE(data + p.numel(), kept->params().data() + kept->params().size()) << name;
    }
    EXPECT_EQ(held, count) << name << ": the other layers' parameters are emptied";

    // Its stage computes what the whole model's stage of the same layers does.
    const Batch batch = test::image_batch(6, 4);
    auto first = whole->stage(0, 1);
    Activations none, in, out_whole, out_kept, grad_in;
    first->forward(0, batch, none, in);
    auto a = whole->stage(1, 3), b = kept->stage(1, 3);
    a->forward(0, batch, in, out_whole);
    b->forward(0, batch, in, out_kept);
    EXPECT_EQ(out_kept.values, out_whole.values) << name;
    EXPECT_EQ(out_kept.shape, out_whole.shape) << name;
    Activations grad_out{out_whole.shape, std::vector<float>(out_whole.values.size(), 0.5f)};
    a->backward(0, grad_out, grad_in);
    b->backward(0, grad_out, grad_in);
    EXPECT_TRUE(std::equal(kept->grads().begin(), kept->grads().end(), whole->grads().begin() + from)) << name;

    EXPECT_THROW(kept->stage(0, 2), Error) << name;
    EXPECT_FALSE(kept->keep_layers(1, 2)) << name << ": once only";
    const std::string message = test::error_message([&] { kept->forward_backward(batch); });
    EXPECT_NE(message.find("keeps layers 1-2 only (a pipeline stage)"), std::string::npos) << message;
    const Dataset flat = make_gaussian_clusters(8, 28 * 28, 10, 9);
    const Dataset images("images", {1, 28, 28}, {flat.features().begin(), flat.features().end()},
                         {flat.labels().begin(), flat.labels().end()}, 10);
    EXPECT_THROW(kept->evaluate(images), Error) << name;
  }
}

}  // namespace
}  // namespace ptrain
