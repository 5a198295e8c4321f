#include "sync/gradient_reducer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/timeline.hpp"

namespace ptrain {

GradientReducer::GradientReducer(Communicator& comm, AllreduceAlgorithm algorithm, std::span<float> grads,
                                 const FlatLayout& layout, size_t bucket_bytes, bool overlap,
                                 const CodecConfig& codec)
    : comm_(comm),
      algorithm_(algorithm),
      grads_(grads),
      buckets_(plan_gradient_buckets(layout, bucket_bytes)),
      bucket_of_segment_(layout.segments().size(), kNoBucket),
      segments_in_bucket_(buckets_.size()),
      // One bucket is complete only when backward ends: a communication thread
      // could hide nothing, and would cost two hand-offs a step.
      overlap_(overlap && buckets_.size() > 1),
      missing_(buckets_.size()),
      segment_final_(layout.segments().size()) {
  if (layout.total() != grads.size())
    throw Error(fmt::format("gradient reducer: the layout has {} elements but the gradient buffer {}",
                            layout.total(), grads.size()));
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (size_t s = buckets_[b].first_segment; s <= buckets_[b].last_segment; ++s) bucket_of_segment_[s] = b;
    segments_in_bucket_[b] = buckets_[b].last_segment - buckets_[b].first_segment + 1;
  }
  if (compresses(codec.choice))
    for (const auto& bucket : buckets_) {
      CodecRange range{bucket.count, {}};
      for (size_t s = bucket.first_segment; s <= bucket.last_segment; ++s) {
        const FlatSegment& seg = layout.segments()[s];
        if (seg.shape.size() == 1 && seg.numel > 0)
          range.one_dim.emplace_back(seg.offset - bucket.offset, seg.offset - bucket.offset + seg.numel);
      }
      codecs_.push_back(make_codec(codec, range, comm.rank()));
    }
  encoded_.resize(codecs_.size());
  if (overlap_ && !buckets_.empty())
    thread_ = std::thread([this, track = fmt::format("worker {} comm", comm.rank())] {
      TimelineThread timeline(track);
      run_communication();
    });
}

GradientReducer::~GradientReducer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  // A bucket in flight finishes first (or fails on the communicator's timeout).
  if (thread_.joinable()) thread_.join();
}

void GradientReducer::begin_step(const StepInfo& info) {
  std::lock_guard lock(mutex_);
  step_info_ = info;
  missing_ = segments_in_bucket_;
  segment_final_.assign(segment_final_.size(), false);
  reduced_ = 0;
  in_step_ = true;
}

void GradientReducer::segment_ready(size_t segment) {
  std::lock_guard lock(mutex_);
  if (!in_step_ || segment >= segment_final_.size() || segment_final_[segment]) return;
  segment_final_[segment] = true;
  const size_t bucket = bucket_of_segment_[segment];
  if (bucket != kNoBucket && --missing_[bucket] == 0) changed_.notify_all();
}

void GradientReducer::finish_step(const BucketReduced& reduced) {
  if (!overlap_ || buckets_.empty()) {
    for (size_t b = 0; b < buckets_.size(); ++b) {
      reduce(b);
      if (reduced) reduced(buckets_[b]);
    }
    std::lock_guard lock(mutex_);
    in_step_ = false;
    return;
  }
  std::unique_lock lock(mutex_);
  segment_final_.assign(segment_final_.size(), true);
  missing_.assign(missing_.size(), 0);
  changed_.notify_all();
  for (size_t handed = 0; handed < buckets_.size();) {
    {
      TimelineSpan span("wait", "bucket", static_cast<int64_t>(handed));
      changed_.wait(lock, [&] { return reduced_ > handed || error_; });
    }
    if (error_) {
      in_step_ = false;
      std::rethrow_exception(error_);
    }
    // The communication thread is done with buckets below reduced_ and never
    // touches them again this step.
    const size_t done = reduced_;
    lock.unlock();
    for (; handed < done; ++handed)
      if (reduced) reduced(buckets_[handed]);
    lock.lock();
  }
  in_step_ = false;
}

void GradientReducer::save_state(StateWriter& out) const {
  out.put_value("reducer.codecs", static_cast<uint64_t>(codecs_.size()));
  out.put_value("reducer.steady", steady_);
  for (const auto& codec : codecs_) codec->save_state(out);
}

void GradientReducer::load_state(StateReader& in) {
  const auto codecs = in.take_value<uint64_t>("reducer.codecs");
  if (codecs != codecs_.size())
    throw Error(fmt::format("{}: the state has {} gradient codecs (buckets), this run {}", in.source(), codecs,
                            codecs_.size()));
  steady_ = in.take_value<CodecStats>("reducer.steady");
  for (auto& codec : codecs_) codec->load_state(in);
}

CodecStats GradientReducer::codec_stats() const {
  CodecStats total;
  for (const auto& codec : codecs_) total += codec->stats();
  total += steady_;
  return total;
}

void GradientReducer::reduce(size_t bucket) {
  auto data = grads_.subspan(buckets_[bucket].offset, buckets_[bucket].count);
  const auto b = static_cast<int64_t>(bucket);
  if (codecs_.empty()) {
    TimelineSpan span("all-reduce", "bucket", b);
    comm_.allreduce(data, algorithm_);
  } else {
    Codec& codec = *codecs_[bucket];
    Encoded& mine = encoded_[bucket];
    {
      TimelineSpan span("encode", "bucket", b);
      codec.encode_into(data, step_info_, mine);
    }
    if (!codec.warming_up(step_info_)) {
      steady_.steady_dense_bytes += data.size_bytes();
      steady_.steady_encoded_bytes += mine.bytes.size();
    }
    if (codec.summable_as_half()) {
      // Through a buffer of halves: the wire bytes are not uint16_t objects.
      std::vector<uint16_t> halves(mine.bytes.size() / sizeof(uint16_t));
      std::memcpy(halves.data(), mine.bytes.data(), halves.size() * sizeof(uint16_t));
      {
        TimelineSpan span("all-reduce", "bucket", b);
        comm_.allreduce_half(halves, algorithm_);
      }
      std::memcpy(mine.bytes.data(), halves.data(), halves.size() * sizeof(uint16_t));
      TimelineSpan span("decode", "bucket", b);
      std::fill(data.begin(), data.end(), 0.0f);
      codec.decode_add(mine, data);
    } else {
      std::vector<std::vector<std::byte>> parts;
      {
        TimelineSpan span("all-gather", "bucket", b);
        parts = comm_.allgatherv(mine.bytes);
      }
      TimelineSpan span("decode", "bucket", b);
      std::fill(data.begin(), data.end(), 0.0f);
      for (auto& part : parts) codec.decode_add(Encoded{data.size(), std::move(part)}, data);
    }
  }
  const float inv_workers = 1.0f / static_cast<float>(comm_.size());
  for (float& g : data) g *= inv_workers;
}

void GradientReducer::run_communication() {
  std::unique_lock lock(mutex_);
  for (;;) {
    // Strictly in bucket order, so every worker enters the same collectives in the same order.
    changed_.wait(lock, [&] {
      return stopping_ || (in_step_ && reduced_ < buckets_.size() && missing_[reduced_] == 0);
    });
    if (stopping_) return;
    const size_t bucket = reduced_;
    lock.unlock();
    try {
      reduce(bucket);
    } catch (...) {
      lock.lock();
      error_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    lock.lock();
    ++reduced_;
    changed_.notify_all();
  }
}

}  // namespace ptrain
