// The timeline's recording (core/timeline.hpp) and its Chrome trace file
// (run/timeline_file.hpp): spans on the thread's own track only while a
// timeline is active, nested as the code nests them, from many threads at
// once (ThreadSanitizer runs this), bounded, and carried between processes
// as bytes.
#include "core/timeline.hpp"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "comm/local_group.hpp"
#include "core/error.hpp"
#include "run/timeline_file.hpp"

namespace ptrain {
namespace {

const TimelineTrack& track_named(const std::vector<TimelineTrack>& tracks, const std::string& name) {
  for (const auto& t : tracks)
    if (t.name == name) return t;
  throw Error("no track " + name);
}

TEST(Timeline, RecordsNothingWhenNoneIsActive) {
  TimelineThread thread("worker 0");
  { TimelineSpan span("forward"); }
  Timeline timeline;
  EXPECT_TRUE(timeline.tracks().empty());
  EXPECT_EQ(active_timeline(), nullptr);
}

TEST(Timeline, SpansNestOnTheirThreadsTrack) {
  Timeline timeline;
  ActiveTimeline active(timeline);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([w] {
      TimelineThread thread("worker " + std::to_string(w));
      for (int k = 0; k < 100; ++k) {
        TimelineSpan step("step", "step", k + 1);
        TimelineSpan forward("forward");
      }
    });
  for (auto& t : threads) t.join();
  const auto tracks = timeline.tracks();
  ASSERT_EQ(tracks.size(), 4u);
  for (int w = 0; w < 4; ++w) {
    const auto& events = track_named(tracks, "worker " + std::to_string(w)).events;
    ASSERT_EQ(events.size(), 200u);
    for (int k = 0; k < 100; ++k) {
      const TimelineEvent& forward = events[2 * k];  // the inner span ends first
      const TimelineEvent& step = events[2 * k + 1];
      EXPECT_STREQ(forward.name, "forward");
      EXPECT_STREQ(step.name, "step");
      EXPECT_EQ(step.arg, k + 1);
      EXPECT_STREQ(step.arg_name, "step");
      EXPECT_EQ(forward.arg_name, nullptr);
      EXPECT_LE(step.start_ns, forward.start_ns);
      EXPECT_LE(forward.start_ns + forward.duration_ns, step.start_ns + step.duration_ns);
    }
  }
}

TEST(Timeline, ABoundedTrackStopsAndSaysSo) {
  Timeline timeline(10);
  ActiveTimeline active(timeline);
  {
    TimelineThread thread("worker 0");
    for (int k = 0; k < 25; ++k) TimelineSpan span("step");
  }
  const auto tracks = timeline.tracks();
  EXPECT_EQ(tracks.at(0).events.size(), 10u);
  EXPECT_TRUE(tracks.at(0).truncated);
}

TEST(Timeline, ABindingEndsWithItsScope) {
  Timeline timeline;
  ActiveTimeline active(timeline);
  TimelineThread outer("worker 0");
  {
    TimelineThread inner("worker 0 comm");
    TimelineSpan span("all-reduce");
  }
  { TimelineSpan span("optimizer"); }
  const auto tracks = timeline.tracks();
  EXPECT_STREQ(track_named(tracks, "worker 0 comm").events.at(0).name, "all-reduce");
  EXPECT_STREQ(track_named(tracks, "worker 0").events.at(0).name, "optimizer");
}

TEST(Timeline, TravelsAsBytes) {
  Timeline timeline;
  {
    ActiveTimeline active(timeline);
    TimelineThread thread("server 1");
    TimelineSpan a("apply", "staleness", 3);
    TimelineSpan b("pull");
  }
  const auto bytes = timeline.serialize();
  std::set<std::string> names;
  const auto back = Timeline::deserialize(bytes, names);
  const auto original = timeline.tracks();
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].name, "server 1");
  ASSERT_EQ(back[0].events.size(), original[0].events.size());
  for (size_t i = 0; i < back[0].events.size(); ++i) {
    EXPECT_STREQ(back[0].events[i].name, original[0].events[i].name);
    EXPECT_EQ(back[0].events[i].start_ns, original[0].events[i].start_ns);
    EXPECT_EQ(back[0].events[i].duration_ns, original[0].events[i].duration_ns);
    EXPECT_EQ(back[0].events[i].arg, original[0].events[i].arg);
  }
  for (size_t cut : {size_t{0}, size_t{3}, bytes.size() - 1}) {
    std::set<std::string> more;
    EXPECT_THROW(Timeline::deserialize(std::span(bytes).first(cut), more), Error) << cut;
  }
}

// Four "ranks" (threads over a local group) start on one clock and gather
// their tracks on rank 0, which writes one trace: a process per rank, a row
// per track name, rows in number order.
TEST(Timeline, RanksGatherIntoOneChromeTrace) {
  auto group = std::make_shared<LocalGroup>(4, std::chrono::seconds(30));
  std::vector<std::string> traces(4);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r)
    ranks.emplace_back([&, r] {
      LocalCommunicator comm(group, r);
      Timeline timeline;
      start_timeline_clocks(timeline, &comm);
      {
        // The active timeline is the process's: each "rank" records into its own track directly.
        TimelineTrack& track = timeline.add_track("worker " + std::to_string(r));
        track.events.push_back({"step", timeline.now_ns(), 1000, "step", 1});
        if (r == 0) timeline.add_track("worker 10");
      }
      const auto gathered = gather_timeline(timeline, &comm);
      if (r == 0) traces[0] = chrome_trace_json(gathered);
      else EXPECT_TRUE(gathered.ranks.empty());
    });
  for (auto& t : ranks) t.join();
  const auto trace = nlohmann::json::parse(traces[0]);
  std::set<int> pids;
  std::map<std::pair<int, int>, std::string> rows;
  for (const auto& e : trace["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    if (e["name"] == "thread_name") rows[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (e["ph"] == "X") {
      EXPECT_EQ(e["name"], "step");
      EXPECT_EQ(e["args"]["step"], 1);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.0);
    }
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(rows.at({0, 1}), "worker 0");
  EXPECT_EQ(rows.at({0, 2}), "worker 10");
  EXPECT_EQ(rows.at({3, 1}), "worker 3");
  EXPECT_EQ(trace["otherData"]["truncated"], false);
}

}  // namespace
}  // namespace ptrain
