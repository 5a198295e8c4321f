// Hybrid training of the LibTorch MLP on real Fashion-MNIST samples.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "data/fashion_mnist.hpp"
#include "model/model_registry.hpp"
#include "test_models.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

class HybridMlp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(test::kFashionMnistDir)) return;
    set_compute_threads(1);
    data_ = new Dataset(load_fashion_mnist(test::kFashionMnistDir, Split::Train).head(4800));
  }
  static void TearDownTestSuite() { delete data_; }
  void SetUp() override {
    if (!data_) GTEST_SKIP() << "Fashion-MNIST is not installed at " << test::kFashionMnistDir;
  }
  static RunResult run(int workers, size_t batch, size_t steps, uint64_t seed = 11,
                       OptimizerKind kind = OptimizerKind::Adam, const std::string& model = "mlp",
                       size_t bucket_bytes = size_t{25} << 20, bool overlap = true, bool staged = false,
                       size_t microbatches = 1) {
    TrainConfig c;
    c.make_strategy = test::named_strategy("hybrid", 0, [&](StrategyChoice& s) {
      std::get<HybridOptions>(s).bucket_size.bytes = bucket_bytes;
      std::get<HybridOptions>(s).overlap = overlap;
    });
    c.workers = workers;
    c.batch = batch;
    c.microbatches = microbatches;
    c.max_steps = steps;
    c.seed = seed;
    c.strategy.optimizer.kind = kind;
    c.strategy.optimizer.lr = kind == OptimizerKind::Adam ? 1e-3f : 0.05f;
    ModelConfig m{model, {128}, seed};
    if (!staged) return train(c, *data_, nullptr, [&](int) { return make_model(m, data_->sample_shape(), 10); });
    // Each replica's parameters and gradients in buffers of their own, copied
    // in and out every step as on a GPU.
    ModelInput in{data_->sample_shape(), 10, {}, seed};
    in.device.staged = true;
    const ModelChoice choice = model == "mlp" ? ModelChoice(MlpOptions{{128}}) : ModelChoice(CnnOptions{});
    return train(c, *data_, nullptr, [&](int) { return make_model(choice, in); });
  }
  static Dataset* data_;
};
Dataset* HybridMlp::data_ = nullptr;

TEST_F(HybridMlp, GWorkersEqualOneWorkerWithGTimesTheBatch) {
  for (int g : {2, 3, 4}) {
    const auto b = static_cast<size_t>(g) * 16;
    // The averaged gradient differs from the big batch's only by summation order.
    auto many = run(g, 16, 20, 11, OptimizerKind::Momentum);
    auto one = run(1, b, 20, 11, OptimizerKind::Momentum);
    EXPECT_LE(test::max_relative_difference(many.final_params, one.final_params), 1e-5) << "G=" << g;
    // Adam divides by sqrt(v): on weights whose gradient is almost zero (border
    // pixels) it turns that rounding into a visible step, so compare the vectors.
    many = run(g, 16, 20);
    one = run(1, b, 20);
    EXPECT_LE(test::norm_relative_difference(many.final_params, one.final_params), 1e-5) << "G=" << g;
  }
}

// The GPU path's data movement, on the CPU: replicas that copy parameters in
// and gradients out each step train to the very bits of replicas whose
// module works on the flat buffers themselves (no overlap: a staged
// gradient is on the host only after the whole backward pass).
TEST_F(HybridMlp, StagedReplicasTrainToTheSameBits) {
  for (const std::string model : {"mlp", "cnn"}) {
    const auto in_place = run(3, 8, 6, 11, OptimizerKind::Adam, model);
    const auto staged = run(3, 8, 6, 11, OptimizerKind::Adam, model, size_t{25} << 20, true, true);
    EXPECT_EQ(staged.final_params, in_place.final_params) << model;
    EXPECT_EQ(staged.step_losses, in_place.step_losses) << model;
    // Every step: the parameters and the batch in, the gradients out.
    const DeviceTraffic& t = staged.device_traffic;
    const uint64_t param_bytes = staged.final_params.size() * sizeof(float);
    const uint64_t batch_bytes = 8 * (28 * 28 * sizeof(float) + sizeof(int64_t));
    EXPECT_EQ(t.steps, 6u) << model;
    EXPECT_EQ(t.to_host_bytes, 6 * param_bytes) << model;
    EXPECT_EQ(t.to_device_bytes, 6 * (param_bytes + batch_bytes)) << model;
    EXPECT_EQ(in_place.device_traffic.to_device_bytes + in_place.device_traffic.to_host_bytes, 0u) << model;
  }
}

// GPU workers serve every strategy that exchanges gradients, through any
// codec: the staged path, on the CPU, ends a parameter-server run and a
// DGC-compressed hybrid run with the bits of in-place replicas.
TEST_F(HybridMlp, StagedReplicasServeParameterServersAndCodecs) {
  struct Case {
    std::string strategy;
    CodecChoice codec;
  };
  DgcOptions dgc;
  dgc.density = 0.01;
  for (const Case& k : {Case{"ps-sync", NoCompression{}}, Case{"hybrid", dgc}, Case{"ps-sync", Fp16Options{}}}) {
    auto with = [&](bool staged) {
      TrainConfig c;
      c.make_strategy = test::named_strategy(k.strategy, 2);
      c.workers = 3;
      c.batch = 8;
      c.max_steps = 5;
      c.seed = 11;
      c.strategy.optimizer.kind = OptimizerKind::Momentum;
      c.strategy.optimizer.lr = 0.05f;
      c.strategy.codec = CodecConfig{k.codec, 11, 0};
      ModelInput in{data_->sample_shape(), 10, {}, 11};
      in.device.staged = staged;
      return train(c, *data_, nullptr, [&](int) { return make_model(ModelChoice(MlpOptions{{64}}), in); });
    };
    const auto in_place = with(false), staged = with(true);
    const std::string what = k.strategy + " with codec " + std::string(CodecRegistry::name_of(k.codec));
    EXPECT_EQ(staged.final_params, in_place.final_params) << what;
    EXPECT_EQ(staged.step_losses, in_place.step_losses) << what;
    EXPECT_GT(staged.device_traffic.to_host_bytes, 0u) << what;
  }
}

TEST_F(HybridMlp, SameSeedGivesTheSameLossSequenceBitForBit) {
  auto a = run(4, 32, 30);
  auto b = run(4, 32, 30);
  ASSERT_EQ(a.step_losses.size(), 30u);
  EXPECT_EQ(0, std::memcmp(a.step_losses.data(), b.step_losses.data(), 30 * sizeof(float)));
  EXPECT_EQ(a.final_params, b.final_params);
  EXPECT_NE(a.step_losses, run(4, 32, 30, 12).step_losses);
}

// Buckets split the gradient's all-reduce; overlap only changes when each
// bucket goes, so with the same buckets the run is the same bits.
TEST_F(HybridMlp, OverlapAndBucketsDoNotChangeTheResult) {
  for (const char* model : {"mlp", "cnn"}) {
    const auto one_bucket = run(3, 8, 6, 11, OptimizerKind::Adam, model, size_t{25} << 20, false);
    for (size_t bucket : {size_t{4096}, size_t{64} << 10}) {
      const auto overlapped = run(3, 8, 6, 11, OptimizerKind::Adam, model, bucket, true);
      const auto serial = run(3, 8, 6, 11, OptimizerKind::Adam, model, bucket, false);
      EXPECT_EQ(overlapped.final_params, serial.final_params) << model << ", buckets of " << bucket;
      EXPECT_EQ(overlapped.step_losses, serial.step_losses) << model;
      // The native all-reduce adds in rank order whatever the bucket: the same bits again.
      EXPECT_EQ(overlapped.final_params, one_bucket.final_params) << model << ", buckets of " << bucket;
    }
  }
}

// Gradient accumulation under overlap: each bucket's all-reduce starts during
// the last micro-batch's backward, once it holds the earlier ones' gradients,
// so the run is the bits of the same micro-batches without overlap.
TEST_F(HybridMlp, MicrobatchesUnderOverlapGiveTheBitsOfTheSerialRun) {
  for (const char* model : {"mlp", "cnn"}) {
    const auto overlapped = run(3, 8, 6, 11, OptimizerKind::Adam, model, size_t{4096}, true, false, 4);
    const auto serial = run(3, 8, 6, 11, OptimizerKind::Adam, model, size_t{4096}, false, false, 4);
    EXPECT_EQ(overlapped.final_params, serial.final_params) << model;
    EXPECT_EQ(overlapped.step_losses, serial.step_losses) << model;
    const auto whole = run(3, 8, 6, 11, OptimizerKind::Adam, model, size_t{4096}, false);
    EXPECT_NE(serial.final_params, whole.final_params) << model << ": the micro-batches were taken";
    EXPECT_LT(test::max_relative_difference(serial.final_params, whole.final_params), 1e-3) << model;
  }
}

}  // namespace
}  // namespace ptrain
