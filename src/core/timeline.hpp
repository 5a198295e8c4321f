#pragma once
// What each thread of a run did when: spans (forward, backward, a bucket's
// all-reduce, ...) recorded into the calling thread's track of the active
// timeline (run/timeline_file.hpp writes them as Chrome trace events).
//
// Off (no timeline active, or a thread bound to none) a span costs one
// thread-local load and a branch. On, it reads the steady clock twice and
// appends 32 bytes to its own thread's track: no lock, no allocation but the
// vector's growth. Tracks stop recording at a bound, so that a long run
// cannot fill the memory; the file then says it was truncated.
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace ptrain {

struct TimelineEvent {
  const char* name = "";   // a string literal: spans name what the code does
  int64_t start_ns = 0;    // from the timeline's origin
  int64_t duration_ns = 0;
  const char* arg_name = nullptr;  // null: no argument ("step", "bucket")
  int64_t arg = 0;
};

struct TimelineTrack {
  std::string name;  // "worker 0", "worker 0 comm", "server 1"
  std::vector<TimelineEvent> events;
  bool truncated = false;  // it reached the bound and stopped recording
};

// The tracks of one process's part of a run. Threads bind to a track of their
// own; the tracks are read once those threads have finished.
class Timeline {
 public:
  static constexpr size_t kDefaultMaxEvents = 2'000'000;  // per track: 64 MB at most
  explicit Timeline(size_t max_events_per_track = kDefaultMaxEvents);
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // This process's steady clock, ns.
  static int64_t clock_ns();
  // Spans start from here: now, or a reading of clock_ns() (another
  // process's origin, translated to this one's clock: one clock for all).
  void set_origin_now();
  void set_origin(int64_t clock_ns);
  int64_t now_ns() const;

  // A new track for the calling thread (TimelineThread binds it).
  TimelineTrack& add_track(std::string name);
  size_t max_events() const { return max_events_; }

  // The tracks so far (call when the threads that record are done).
  std::vector<TimelineTrack> tracks() const;

  // Bytes for another process to rebuild the tracks from (under mpirun every
  // rank's go to the one that writes the file). Event names travel as text.
  std::vector<std::byte> serialize() const;
  // Names are interned in `names` (the events point into it). Throws ptrain::Error on bytes it did not write.
  static std::vector<TimelineTrack> deserialize(std::span<const std::byte> bytes, std::set<std::string>& names);

 private:
  size_t max_events_;
  int64_t origin_ns_ = 0;
  mutable std::mutex mutex_;  // guards tracks_ (the list, not the events)
  std::vector<std::unique_ptr<TimelineTrack>> tracks_;
};

// The process's active timeline (null: none). One run at a time records.
Timeline* active_timeline();

// Makes `timeline` the active one for its lifetime.
class ActiveTimeline {
 public:
  explicit ActiveTimeline(Timeline& timeline);
  ~ActiveTimeline();
  ActiveTimeline(const ActiveTimeline&) = delete;
  ActiveTimeline& operator=(const ActiveTimeline&) = delete;
};

// Binds the calling thread to a new track `name` of the active timeline (if
// any) for its lifetime; what the thread was bound to before comes back after.
class TimelineThread {
 public:
  explicit TimelineThread(const std::string& name);
  ~TimelineThread();
  TimelineThread(const TimelineThread&) = delete;
  TimelineThread& operator=(const TimelineThread&) = delete;

 private:
  void* previous_;
};

namespace timeline_detail {
struct Recorder {
  Timeline* timeline;
  TimelineTrack* track;
};
Recorder* current();
void record(Recorder& r, const char* name, int64_t start_ns, const char* arg_name, int64_t arg);
}  // namespace timeline_detail

// One span of the calling thread, from construction to destruction.
class TimelineSpan {
 public:
  explicit TimelineSpan(const char* name, const char* arg_name = nullptr, int64_t arg = 0)
      : recorder_(timeline_detail::current()) {
    if (recorder_) {
      name_ = name, arg_name_ = arg_name, arg_ = arg;
      start_ns_ = recorder_->timeline->now_ns();
    }
  }
  ~TimelineSpan() {
    if (recorder_) timeline_detail::record(*recorder_, name_, start_ns_, arg_name_, arg_);
  }
  TimelineSpan(const TimelineSpan&) = delete;
  TimelineSpan& operator=(const TimelineSpan&) = delete;

 private:
  timeline_detail::Recorder* recorder_;
  const char* name_ = nullptr;
  const char* arg_name_ = nullptr;
  int64_t arg_ = 0;
  int64_t start_ns_ = 0;
};

}  // namespace ptrain
