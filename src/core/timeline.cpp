#include "core/timeline.hpp"

#include <atomic>
#include <chrono>
#include <cstring>

#include "core/error.hpp"

namespace ptrain {

namespace {

std::atomic<Timeline*> g_active{nullptr};
thread_local timeline_detail::Recorder* t_recorder = nullptr;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <class T>
void put(std::vector<std::byte>& out, T value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof value);
}

void put_text(std::vector<std::byte>& out, std::string_view text) {
  put<uint32_t>(out, static_cast<uint32_t>(text.size()));
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  out.insert(out.end(), p, p + text.size());
}

class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}
  template <class T>
  T take() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  std::string take_text() {
    const auto size = take<uint32_t>();
    need(size);
    std::string text(reinterpret_cast<const char*>(bytes_.data() + at_), size);
    at_ += size;
    return text;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void need(size_t n) const {
    if (bytes_.size() - at_ < n) throw Error("timeline: a rank's events are cut short");
  }
  std::span<const std::byte> bytes_;
  size_t at_ = 0;
};

}  // namespace

Timeline::Timeline(size_t max_events_per_track) : max_events_(max_events_per_track) { set_origin_now(); }

int64_t Timeline::clock_ns() { return steady_ns(); }

void Timeline::set_origin_now() { origin_ns_ = steady_ns(); }

void Timeline::set_origin(int64_t clock_ns) { origin_ns_ = clock_ns; }

int64_t Timeline::now_ns() const { return steady_ns() - origin_ns_; }

TimelineTrack& Timeline::add_track(std::string name) {
  auto track = std::make_unique<TimelineTrack>();
  track->name = std::move(name);
  track->events.reserve(std::min<size_t>(max_events_, 4096));
  std::lock_guard lock(mutex_);
  tracks_.push_back(std::move(track));
  return *tracks_.back();
}

std::vector<TimelineTrack> Timeline::tracks() const {
  std::lock_guard lock(mutex_);
  std::vector<TimelineTrack> out;
  out.reserve(tracks_.size());
  for (const auto& t : tracks_) out.push_back(*t);
  return out;
}

std::vector<std::byte> Timeline::serialize() const {
  std::vector<std::byte> out;
  std::lock_guard lock(mutex_);
  put<uint32_t>(out, static_cast<uint32_t>(tracks_.size()));
  for (const auto& track : tracks_) {
    const TimelineTrack& t = *track;
    put_text(out, t.name);
    put<uint8_t>(out, t.truncated ? 1 : 0);
    put<uint64_t>(out, t.events.size());
    for (const auto& e : t.events) {
      put_text(out, e.name);
      put<int64_t>(out, e.start_ns);
      put<int64_t>(out, e.duration_ns);
      put<uint8_t>(out, e.arg_name ? 1 : 0);
      if (e.arg_name) put_text(out, e.arg_name), put<int64_t>(out, e.arg);
    }
  }
  return out;
}

std::vector<TimelineTrack> Timeline::deserialize(std::span<const std::byte> bytes, std::set<std::string>& names) {
  Reader in(bytes);
  auto intern = [&](std::string text) { return names.insert(std::move(text)).first->c_str(); };
  std::vector<TimelineTrack> tracks(in.take<uint32_t>());
  for (auto& t : tracks) {
    t.name = in.take_text();
    t.truncated = in.take<uint8_t>() != 0;
    const auto count = in.take<uint64_t>();
    if (count > bytes.size()) throw Error("timeline: a rank's events are cut short");
    t.events.resize(count);
    for (auto& e : t.events) {
      e.name = intern(in.take_text());
      e.start_ns = in.take<int64_t>();
      e.duration_ns = in.take<int64_t>();
      if (in.take<uint8_t>() != 0) e.arg_name = intern(in.take_text()), e.arg = in.take<int64_t>();
    }
  }
  if (!in.done()) throw Error("timeline: a rank sent more than its events");
  return tracks;
}

Timeline* active_timeline() { return g_active.load(std::memory_order_acquire); }

ActiveTimeline::ActiveTimeline(Timeline& timeline) { g_active.store(&timeline, std::memory_order_release); }
ActiveTimeline::~ActiveTimeline() { g_active.store(nullptr, std::memory_order_release); }

TimelineThread::TimelineThread(const std::string& name) : previous_(t_recorder) {
  Timeline* timeline = active_timeline();
  t_recorder = timeline ? new timeline_detail::Recorder{timeline, &timeline->add_track(name)} : nullptr;
}

TimelineThread::~TimelineThread() {
  delete t_recorder;
  t_recorder = static_cast<timeline_detail::Recorder*>(previous_);
}

namespace timeline_detail {

Recorder* current() { return t_recorder; }

void record(Recorder& r, const char* name, int64_t start_ns, const char* arg_name, int64_t arg) {
  TimelineTrack& track = *r.track;
  if (track.events.size() >= r.timeline->max_events()) {
    track.truncated = true;
    return;
  }
  track.events.push_back({name, start_ns, r.timeline->now_ns() - start_ns, arg_name, arg});
}

}  // namespace timeline_detail

}  // namespace ptrain
