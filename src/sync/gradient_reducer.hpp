#pragma once
// Averages one step's gradient over all workers, bucket by bucket (PyTorch
// DDP's Reducer). With overlap, a communication thread of this worker starts
// each bucket's all-reduce as soon as backward has produced all of its
// gradients, while backward goes on with the earlier layers; without it, the
// buckets are all-reduced one after another once backward has returned.
// Either way the buckets go in the same order on every worker, and the result
// is the same bits.
//
// With a codec (compress/), each bucket is encoded by this worker's codec for
// it; a codec whose wire form is IEEE halves (fp16) is all-reduced in that
// form, any other's is all-gathered, and every worker decodes every worker's
// part into the bucket, in rank order.
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "comm/communicator.hpp"
#include "compress/codec_registry.hpp"
#include "sync/gradient_buckets.hpp"

namespace ptrain {

class GradientReducer {
 public:
  // `grads` is the flat gradient buffer the buckets cut up; it must outlive the reducer.
  GradientReducer(Communicator& comm, AllreduceAlgorithm algorithm, std::span<float> grads,
                  const FlatLayout& layout, size_t bucket_bytes, bool overlap,
                  const CodecConfig& codec = CodecConfig{});
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Before the step's backward: no gradient is final yet.
  void begin_step(const StepInfo& info = StepInfo{});
  // From the backward pass: the gradient of layout segment `segment` is final.
  void segment_ready(size_t segment);
  // Called for each bucket, in order, once it holds the mean gradient.
  using BucketReduced = std::function<void(const GradientBucket& bucket)>;
  // After backward: marks what is left as final (tensors backward did not
  // reach), waits until every bucket holds the mean gradient, and rethrows a
  // communication error. `reduced` runs on this (the caller's) thread for
  // each bucket as soon as it is done, while the communication thread goes on
  // with the later ones (the optimizer updates a bucket's parameters there).
  void finish_step(const BucketReduced& reduced = {});

  size_t bucket_count() const { return buckets_.size(); }
  // Whether a communication thread all-reduces buckets during backward
  // (overlap was asked for and there is more than one bucket).
  bool overlapping() const { return overlap_; }
  // The codecs' counters, summed over the buckets (call between steps).
  CodecStats codec_stats() const;
  // The codecs' state (call between steps), for checkpoints.
  void save_state(StateWriter& out) const;
  void load_state(StateReader& in);

 private:
  void reduce(size_t bucket);  // all-reduce (or encode, exchange, decode), then divide by the worker count
  void run_communication();    // the communication thread's loop

  Communicator& comm_;
  const AllreduceAlgorithm algorithm_;
  const std::span<float> grads_;
  const std::vector<GradientBucket> buckets_;
  static constexpr size_t kNoBucket = ~size_t{0};  // segments of a layout with no elements at all
  std::vector<size_t> bucket_of_segment_;
  std::vector<size_t> segments_in_bucket_;
  const bool overlap_;
  std::vector<std::unique_ptr<Codec>> codecs_;  // per bucket; empty without compression
  std::vector<Encoded> encoded_;                 // per bucket with codecs_: message buffers reused step to step
  StepInfo step_info_;                          // this step's, for the codecs
  CodecStats steady_;                           // the steady_* byte counts, kept here for every codec

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<size_t> missing_;      // per bucket: segments not yet final this step
  std::vector<bool> segment_final_;  // this step
  size_t reduced_ = 0;               // buckets done this step, in order
  bool in_step_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace ptrain
