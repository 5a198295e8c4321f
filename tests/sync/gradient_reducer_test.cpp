#include "sync/gradient_reducer.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>

#include "comm/local_group.hpp"
#include "core/error.hpp"
#include "local_workers.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

// Forwards to another communicator, counting the all-reduces that have
// finished, and can fail the n-th one.
class CountingCommunicator : public Communicator {
 public:
  explicit CountingCommunicator(Communicator& inner, int fail_at = 0) : inner_(inner), fail_at_(fail_at) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }
  void allreduce(std::span<float> data, AllreduceAlgorithm algorithm) override {
    if (++started_ == fail_at_) throw Error("injected failure");
    inner_.allreduce(data, algorithm);
    finished_.fetch_add(1);
  }
  void broadcast(std::span<std::byte> data, int root) override { inner_.broadcast(data, root); }
  void barrier() override { inner_.barrier(); }
  void send(int peer, int tag, std::span<const std::byte> data) override { inner_.send(peer, tag, data); }
  void recv(int peer, int tag, std::span<std::byte> data) override { inner_.recv(peer, tag, data); }
  int finished() const { return finished_.load(); }

 private:
  Communicator& inner_;
  int fail_at_;
  int started_ = 0;
  std::atomic<int> finished_{0};
};

using test::layout_of;

// Worker r's gradient at step s: small integers, so every sum is exact.
float gradient_value(int rank, size_t step, size_t i) {
  return static_cast<float>((static_cast<size_t>(rank) * 5 + step * 3 + i) % 11);
}

// The first element of `grads` that is not the mean of the n workers'
// gradients at `step` (exactly: small integers), or kAllRight.
constexpr size_t kAllRight = ~size_t{0};
// Only elements [begin, end) when given.
size_t first_wrong_mean(std::span<const float> grads, int n, size_t step, size_t begin = 0,
                        size_t end = kAllRight) {
  for (size_t i = begin; i < std::min(end, grads.size()); ++i) {
    float sum = 0;
    for (int r = 0; r < n; ++r) sum += gradient_value(r, step, i);
    if (grads[i] != sum * (1.0f / static_cast<float>(n))) return i;
  }
  return kAllRight;
}

// A backward pass: each segment, last to first, is written and then reported.
// `between` runs after each report (to pause, to look).
void backward(const FlatLayout& layout, std::span<float> grads, int rank, size_t step,
              GradientReducer& reducer, const std::function<void(size_t)>& between = {}) {
  for (size_t s = layout.segments().size(); s-- > 0;) {
    const auto& seg = layout.segments()[s];
    for (size_t i = seg.offset; i < seg.offset + seg.numel; ++i) grads[i] = gradient_value(rank, step, i);
    reducer.segment_ready(s);
    if (between) between(s);
  }
}

void run_workers(int n, const std::function<void(Communicator&)>& body) {
  const auto errors =
      test::run_local_workers(n, std::chrono::seconds(30), [&](int, LocalCommunicator& comm) { body(comm); });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "worker " << r;
}

TEST(GradientReducer, EveryBucketHoldsTheMeanWithAndWithoutOverlap) {
  const auto layout = layout_of({5, 1, 17, 3, 40, 2});
  const int n = 3;
  for (auto algorithm : {AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring,
                         AllreduceAlgorithm::HalvingDoubling, AllreduceAlgorithm::Tree})
    for (size_t bucket_bytes : {size_t{4}, size_t{64}, size_t{1} << 20})
      for (bool overlap : {true, false})
        run_workers(n, [&](Communicator& comm) {
          std::vector<float> grads(layout.total());
          GradientReducer reducer(comm, algorithm, grads, layout, bucket_bytes, overlap);
          for (size_t step = 0; step < 4; ++step) {
            reducer.begin_step();
            backward(layout, grads, comm.rank(), step, reducer);
            reducer.finish_step();
            ASSERT_EQ(first_wrong_mean(grads, n, step), kAllRight)
                << to_string(algorithm) << " buckets of " << bucket_bytes << " B, overlap " << overlap
                << ", step " << step;
          }
        });
}

TEST(GradientReducer, OverlapFinishesTheFirstBucketWhileBackwardStillRuns) {
  const auto layout = layout_of({300, 300, 300});  // buckets of one tensor each
  for (bool overlap : {true, false})
    run_workers(2, [&](Communicator& local) {
      CountingCommunicator comm(local);
      std::vector<float> grads(layout.total());
      GradientReducer reducer(comm, AllreduceAlgorithm::Native, grads, layout, 300 * sizeof(float), overlap);
      ASSERT_EQ(reducer.bucket_count(), 3u);
      reducer.begin_step();
      int finished_during_backward = 0;
      backward(layout, grads, comm.rank(), 0, reducer, [&](size_t segment) {
        if (segment != 2 || !overlap) return;
        // The last tensor's bucket is complete: its all-reduce must finish
        // without waiting for the rest of backward.
        for (int i = 0; i < 20000 && comm.finished() == 0; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        finished_during_backward = comm.finished();
      });
      if (!overlap) finished_during_backward = comm.finished();
      reducer.finish_step();
      EXPECT_EQ(comm.finished(), 3);
      if (overlap)
        EXPECT_GE(finished_during_backward, 1);
      else
        EXPECT_EQ(finished_during_backward, 0) << "without overlap nothing may start before backward ends";
    });
}

TEST(GradientReducer, OneBucketIsReducedOnTheWorkersThreadAfterBackward) {
  const auto layout = layout_of({300, 300, 300});
  run_workers(2, [&](Communicator& local) {
    CountingCommunicator comm(local);
    std::vector<float> grads(layout.total(), static_cast<float>(comm.rank() + 1));
    GradientReducer reducer(comm, AllreduceAlgorithm::Native, grads, layout, size_t{25} << 20, /*overlap=*/true);
    ASSERT_EQ(reducer.bucket_count(), 1u);
    EXPECT_FALSE(reducer.overlapping()) << "a single bucket is complete only when backward ends";
    reducer.begin_step();
    int finished_during_backward = -1;
    backward(layout, grads, comm.rank(), 0, reducer, [&](size_t) { finished_during_backward = comm.finished(); });
    reducer.finish_step();
    EXPECT_EQ(finished_during_backward, 0);
    EXPECT_EQ(comm.finished(), 1);
  });
  std::vector<float> grads(layout.total());
  auto group = std::make_shared<LocalGroup>(1);
  LocalCommunicator alone(group, 0);
  EXPECT_TRUE(GradientReducer(alone, AllreduceAlgorithm::Native, grads, layout, 300 * sizeof(float), true).overlapping());
}

// The optimizer updates each bucket's parameters from finish_step's callback:
// every bucket is handed over once, last layers first, already holding the
// mean, with and without the communication thread.
TEST(GradientReducer, HandsEachBucketOverOnceInOrderHoldingTheMean) {
  const auto layout = layout_of({5, 1, 17, 3, 40, 2});
  const int n = 3;
  for (bool overlap : {true, false})
    run_workers(n, [&](Communicator& comm) {
      std::vector<float> grads(layout.total());
      GradientReducer reducer(comm, AllreduceAlgorithm::Ring, grads, layout, 64, overlap);
      ASSERT_GT(reducer.bucket_count(), 2u);
      for (size_t step = 0; step < 3; ++step) {
        reducer.begin_step();
        backward(layout, grads, comm.rank(), step, reducer, [&](size_t) { std::this_thread::yield(); });
        size_t next_end = layout.total();  // buckets go from the end of the buffer to its start
        reducer.finish_step([&](const GradientBucket& bucket) {
          EXPECT_EQ(bucket.offset + bucket.count, next_end) << "overlap " << overlap << ", step " << step;
          next_end = bucket.offset;
          EXPECT_EQ(first_wrong_mean(grads, n, step, bucket.offset, bucket.offset + bucket.count), kAllRight)
              << "bucket at " << bucket.offset << ", overlap " << overlap;
        });
        EXPECT_EQ(next_end, 0u) << "every bucket handed over, overlap " << overlap;
      }
    });
}

TEST(GradientReducer, TensorsBackwardNeverReachesAreReducedAtTheEnd) {
  const auto layout = layout_of({4, 4, 4, 4});
  run_workers(2, [&](Communicator& comm) {
    std::vector<float> grads(layout.total(), static_cast<float>(comm.rank() + 1));
    GradientReducer reducer(comm, AllreduceAlgorithm::Ring, grads, layout, 16, true);
    reducer.begin_step();
    reducer.segment_ready(1);   // out of order, and 0, 2, 3 never
    reducer.segment_ready(1);   // twice: counted once
    reducer.segment_ready(99);  // not a segment: ignored
    reducer.finish_step();
    for (float g : grads) EXPECT_EQ(g, 1.5f);
  });
}

TEST(GradientReducer, ACommunicationErrorReachesTheStepAndStopsNothingElse) {
  const auto layout = layout_of({8, 8, 8});
  for (bool overlap : {true, false}) {
    auto group = std::make_shared<LocalGroup>(1);
    LocalCommunicator local(group, 0);
    CountingCommunicator comm(local, /*fail_at=*/2);
    std::vector<float> grads(layout.total(), 1.0f);
    GradientReducer reducer(comm, AllreduceAlgorithm::Native, grads, layout, 32, overlap);
    reducer.begin_step();
    backward(layout, grads, 0, 0, reducer);
    try {
      reducer.finish_step();
      ADD_FAILURE() << "expected the injected failure, overlap " << overlap;
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "injected failure");
    }
  }  // and the destructor returns
}

// Codecs that lose nothing on small integers give the dense mean exactly: fp16
// (all-reduced as halves), top-k with every element, DGC at density 100%
// without momentum correction (all gathered and decoded in rank order).
TEST(GradientReducer, LosslessCodecsGiveTheDenseMean) {
  const auto layout = layout_of({5, 1, 17, 3, 40, 2});
  TopkOptions every;
  every.ratio = 1.0;
  DgcOptions dense;
  dense.density = 1.0;
  dense.momentum_correction = Switch::Off;
  const std::vector<CodecConfig> codecs = {{Fp16Options{}}, {every}, {dense}};
  const int n = 3;
  for (const auto& codec : codecs)
    for (auto algorithm : {AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring})
      for (bool overlap : {true, false})
        run_workers(n, [&](Communicator& comm) {
          std::vector<float> grads(layout.total());
          GradientReducer reducer(comm, algorithm, grads, layout, 64, overlap, codec);
          for (size_t step = 0; step < 3; ++step) {
            reducer.begin_step(StepInfo{step, 0.0, n});
            backward(layout, grads, comm.rank(), step, reducer);
            reducer.finish_step();
            ASSERT_EQ(first_wrong_mean(grads, n, step), kAllRight)
                << CodecRegistry::name_of(codec.choice) << ", " << to_string(algorithm) << ", overlap " << overlap << ", step " << step;
          }
          const CodecStats stats = reducer.codec_stats();
          EXPECT_EQ(stats.dense_bytes, 3 * layout.total() * sizeof(float)) << CodecRegistry::name_of(codec.choice);
          EXPECT_GT(stats.encoded_bytes, 0u) << CodecRegistry::name_of(codec.choice);
          if (std::holds_alternative<Fp16Options>(codec.choice)) {
            EXPECT_DOUBLE_EQ(stats.ratio(), 2.0);
          }
        });
}

// The sparse all-gather, for 1 to 8 workers: every worker ends with the mean
// of what each worker's codec encoded, decoded (lossy codecs included).
TEST(GradientReducer, SparseAllgatherEqualsTheSumOfTheDecodedParts) {
  FlatLayout layout;  // a matrix and a bias: DGC sends the bias dense
  layout.add("w", {97, 10});
  layout.add("b", {13});
  TopkOptions topk;
  topk.ratio = 0.05;
  DgcOptions dgc;
  dgc.density = 0.05;
  const std::vector<CodecConfig> codecs = {{topk}, {dgc}};
  for (const auto& codec : codecs)
    for (int n = 1; n <= 8; ++n)
      run_workers(n, [&](Communicator& comm) {
        std::vector<float> grads(layout.total());
        GradientReducer reducer(comm, AllreduceAlgorithm::Native, grads, layout, size_t{1} << 20, true,
                                codec);
        const StepInfo info{0, 0.0, n};
        reducer.begin_step(info);
        backward(layout, grads, comm.rank(), 0, reducer);
        reducer.finish_step();
        // What each worker's fresh codec makes of its gradient, decoded and summed in rank order.
        CodecRange range{layout.total(), {{970, 983}}};
        std::vector<float> expected(layout.total(), 0.0f), g(layout.total());
        for (int r = 0; r < n; ++r) {
          for (size_t i = 0; i < g.size(); ++i) g[i] = gradient_value(r, 0, i);
          auto twin = make_codec(codec, range, r);
          twin->decode_add(twin->encode(g, info), expected);
        }
        for (float& e : expected) e *= 1.0f / static_cast<float>(n);
        ASSERT_EQ(grads, expected) << CodecRegistry::name_of(codec.choice) << ", " << n << " workers";
      });
}

// The bytes a sparse codec puts on the wire, and the ratio the report gives.
TEST(GradientReducer, SparseCodecsSendAFractionOfTheBytes) {
  const auto layout = layout_of({100000});
  TopkOptions one_percent;
  one_percent.ratio = 0.01;
  const CodecConfig topk{one_percent};
  run_workers(2, [&](Communicator& comm) {
    std::vector<float> grads(layout.total());
    GradientReducer reducer(comm, AllreduceAlgorithm::Native, grads, layout, size_t{1} << 20, true, topk);
    const uint64_t before = comm.stats().bytes_sent;
    reducer.begin_step(StepInfo{0, 0.0, 2});
    backward(layout, grads, comm.rank(), 0, reducer);
    reducer.finish_step();
    const CodecStats stats = reducer.codec_stats();
    EXPECT_EQ(stats.selected, 1000u);
    EXPECT_GE(stats.ratio(), 40.0);  // 8 bytes (index, value) per element sent, against 4 per element
    EXPECT_LE(stats.ratio(), 50.0);
    EXPECT_LT(comm.stats().bytes_sent - before, 2 * stats.encoded_bytes);
  });
}

TEST(GradientReducer, ALayoutThatDoesNotMatchTheBufferIsAnError) {
  auto group = std::make_shared<LocalGroup>(1);
  LocalCommunicator comm(group, 0);
  std::vector<float> grads(5);
  EXPECT_THROW(GradientReducer(comm, AllreduceAlgorithm::Native, grads, layout_of({4}), 64, true), Error);
}

}  // namespace
}  // namespace ptrain
