// PullEncoder: what a shard sends each pulling worker, and the copy of what
// that worker holds. The test stands in for the worker: it applies each reply
// as PsClient does (dense: copy; coded: the pull codec's decode_add).
#include "ps/pull_encoder.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/rng.hpp"
#include "ps/ps_protocol.hpp"

namespace ptrain {
namespace {

constexpr size_t kCount = 100;

// A worker's side of the pulls: what it holds, and the decoder it would use.
struct Worker {
  std::vector<float> values = std::vector<float>(kCount, -1.0f);  // anything: its first pull is dense
  std::unique_ptr<Codec> decoder;
  PullEncoding last = PullEncoding::Dense;

  explicit Worker(const PullCodecChoice& choice) : decoder(make_pull_codec(choice, CodecRange{kCount, {}})) {}

  void take(std::span<const std::byte> reply) {
    const auto header = ps_header<PsParamsHeader>(reply, "parameters");
    const auto payload = ps_payload(reply, sizeof(PsParamsHeader));
    last = static_cast<PullEncoding>(header.encoding);
    if (last == PullEncoding::Dense) {
      ASSERT_EQ(payload.size(), kCount * sizeof(float));
      std::memcpy(values.data(), payload.data(), payload.size());
    } else {
      ASSERT_NE(decoder, nullptr);
      decoder->decode_add(Encoded{kCount, {payload.begin(), payload.end()}}, values);
    }
  }
};

float max_error(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// Parameters that move by up to `step` each update, as training moves them.
struct Walk {
  std::vector<float> params = std::vector<float>(kCount);
  Rng rng{11};
  Walk() {
    for (float& p : params) p = rng.uniform() - 0.5f;
  }
  void move(float step) {
    for (float& p : params) p += step * (2 * rng.uniform() - 1);
  }
};

TEST(PullEncoder, DensePullsSendTheParametersAsTheyAreAndCountThem) {
  PullEncoder encoder(PullCodecChoice{DensePullOptions{}}, CodecRange{kCount, {}}, 2);
  Walk walk;
  Worker worker(PullCodecChoice{DensePullOptions{}});
  for (int pull = 0; pull < 3; ++pull) {
    worker.take(encoder.reply(1, walk.params, 5, false));
    EXPECT_EQ(worker.last, PullEncoding::Dense);
    EXPECT_EQ(worker.values, walk.params);
    walk.move(0.01f);
    encoder.parameters_changed();
  }
  EXPECT_EQ(encoder.counts().pulls, 3u);
  EXPECT_EQ(encoder.counts().dense_pulls, 3u);
  EXPECT_EQ(encoder.counts().wire_bytes, 3 * kCount * sizeof(float));
  EXPECT_EQ(encoder.counts().dense_bytes, 3 * kCount * sizeof(float));
}

// The error of what the worker holds stays that of one pull's rounding of the
// change, however many pulls go by: nothing accumulates.
void expect_error_bounded(PullCodecChoice choice, float bound, double min_ratio) {
  const PullCodecChoice& config = choice;
  PullEncoder encoder(config, CodecRange{kCount, {}}, 2);
  Worker worker(config);
  Walk walk;
  worker.take(encoder.reply(0, walk.params, 0, false));
  EXPECT_EQ(worker.last, PullEncoding::Dense) << "the first pull is dense";
  EXPECT_EQ(worker.values, walk.params);
  float worst = 0;
  for (int pull = 1; pull <= 300; ++pull) {
    walk.move(0.01f);
    encoder.parameters_changed();
    worker.take(encoder.reply(0, walk.params, static_cast<uint64_t>(pull), false));
    EXPECT_EQ(worker.last, PullEncoding::Coded);
    worst = std::max(worst, max_error(worker.values, walk.params));
  }
  EXPECT_LT(worst, bound);
  const auto& c = encoder.counts();
  EXPECT_EQ(c.pulls, 301u);
  EXPECT_EQ(c.dense_pulls, 1u);
  EXPECT_GE(static_cast<double>(c.dense_bytes) / static_cast<double>(c.wire_bytes), min_ratio);
  // An exact pull is the parameters, bit for bit.
  worker.take(encoder.reply(0, walk.params, 301, true));
  EXPECT_EQ(worker.last, PullEncoding::Dense);
  EXPECT_EQ(worker.values, walk.params);
}

TEST(PullEncoder, Fp16ChangesKeepTheWorkersErrorToOnePullsRounding) {
  // Changes of about 0.01 rounded to 11 bits: below 1e-5, where 300 rounded
  // changes added up would drift by more.
  expect_error_bounded(Fp16PullOptions{}, 1e-5f, 1.99);
}

TEST(PullEncoder, Int8ChangesKeepTheWorkersErrorToOnePullsRounding) {
  // One scale for the 100 changes: max |change| / 127, each within half of it.
  expect_error_bounded(Int8PullOptions{}, 1e-4f, 3.8);
}

TEST(PullEncoder, TopkSendsWhatItLeftOutLaterAndRefreshesDenseEveryN) {
  TopkPullOptions topk;
  topk.ratio = 0.1;
  topk.refresh = 0;
  auto config = PullCodecChoice{topk};
  {
    PullEncoder encoder(config, CodecRange{kCount, {}}, 1);
    Worker worker(config);
    Walk walk;
    worker.take(encoder.reply(0, walk.params, 0, false));
    walk.move(0.05f);
    encoder.parameters_changed();
    // The parameters stop changing: ten pulls of ten changes each send every one.
    for (int pull = 1; pull <= 10; ++pull) {
      EXPECT_NE(worker.values, walk.params) << "pull " << pull;
      worker.take(encoder.reply(0, walk.params, 1, false));
      EXPECT_EQ(worker.last, PullEncoding::Coded);
    }
    EXPECT_EQ(worker.values, walk.params);
    // Ten (index, value) pairs a pull, not a hundred floats.
    EXPECT_LT(encoder.counts().wire_bytes - kCount * sizeof(float), 10 * kCount * sizeof(float) / 4);
  }
  topk.refresh = 4;
  config = PullCodecChoice{topk};
  PullEncoder encoder(config, CodecRange{kCount, {}}, 1);
  Worker worker(config);
  Walk walk;
  for (int pull = 0; pull < 12; ++pull) {
    worker.take(encoder.reply(0, walk.params, static_cast<uint64_t>(pull), false));
    const bool refresh = pull % 4 == 0;
    EXPECT_EQ(worker.last, refresh ? PullEncoding::Dense : PullEncoding::Coded) << "pull " << pull;
    if (refresh) {
      EXPECT_EQ(worker.values, walk.params) << "pull " << pull;
    }
    walk.move(0.01f);
    encoder.parameters_changed();
  }
  EXPECT_EQ(encoder.counts().dense_pulls, 3u);
}

TEST(PullEncoder, EachWorkerHasItsOwnCopy) {
  const auto config = PullCodecChoice{Fp16PullOptions{}};
  PullEncoder encoder(config, CodecRange{kCount, {}}, 2);
  Worker first(config), second(config);
  Walk walk;
  first.take(encoder.reply(0, walk.params, 0, false));
  walk.move(0.01f);
  encoder.parameters_changed();
  first.take(encoder.reply(0, walk.params, 1, false));
  EXPECT_EQ(first.last, PullEncoding::Coded);
  second.take(encoder.reply(1, walk.params, 1, false));
  EXPECT_EQ(second.last, PullEncoding::Dense) << "worker 1's first pull";
  EXPECT_EQ(second.values, walk.params);
}

TEST(PullEncoder, ACheckpointedCopyAnswersAsTheOriginalWould) {
  TopkPullOptions topk;
  topk.ratio = 0.2;
  topk.refresh = 7;
  const auto config = PullCodecChoice{topk};
  PullEncoder original(config, CodecRange{kCount, {}}, 2);
  Walk walk;
  for (int pull = 0; pull < 5; ++pull) {
    original.reply(pull % 2, walk.params, static_cast<uint64_t>(pull), false);
    walk.move(0.01f);
    original.parameters_changed();
  }
  StateWriter out;
  original.save_state(out);
  const auto bytes = out.take();
  PullEncoder restored(config, CodecRange{kCount, {}}, 2);
  StateReader in(bytes, "the test's checkpoint");
  restored.load_state(in);
  in.expect_end();
  for (int pull = 5; pull < 15; ++pull) {
    const auto a = original.reply(pull % 2, walk.params, static_cast<uint64_t>(pull), false);
    const std::vector<std::byte> first(a.begin(), a.end());
    const auto b = restored.reply(pull % 2, walk.params, static_cast<uint64_t>(pull), false);
    EXPECT_EQ(first, std::vector<std::byte>(b.begin(), b.end())) << "pull " << pull;
    walk.move(0.01f);
    original.parameters_changed();
    restored.parameters_changed();
  }
}

}  // namespace
}  // namespace ptrain
