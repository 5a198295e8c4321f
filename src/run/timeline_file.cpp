#include "run/timeline_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <tuple>
#include <nlohmann/json.hpp>

#include "comm/message_tags.hpp"
#include "run/build_info.hpp"
#include "run/result_file.hpp"

namespace ptrain {

void start_timeline_clocks(Timeline& timeline, Communicator* ranks) {
  if (!ranks || ranks->size() == 1) {
    timeline.set_origin_now();
    return;
  }
  constexpr int kRounds = 16;
  int64_t offset = 0;  // rank 0's clock minus this rank's
  int64_t reading = 0;
  auto bytes = [](int64_t& value) { return std::as_writable_bytes(std::span(&value, 1)); };
  if (ranks->rank() == 0) {
    for (int r = 1; r < ranks->size(); ++r)
      for (int k = 0; k < kRounds; ++k) {
        ranks->recv(r, kTagClockSync, bytes(reading));
        reading = Timeline::clock_ns();
        ranks->send(r, kTagClockSync, bytes(reading));
      }
  } else {
    int64_t quickest = std::numeric_limits<int64_t>::max();
    for (int k = 0; k < kRounds; ++k) {
      const int64_t sent = Timeline::clock_ns();
      reading = sent;
      ranks->send(0, kTagClockSync, bytes(reading));
      ranks->recv(0, kTagClockSync, bytes(reading));
      const int64_t back = Timeline::clock_ns();
      if (back - sent < quickest) quickest = back - sent, offset = reading - (sent + back) / 2;
    }
  }
  // Rank 0's now, which each rank reads on its own clock.
  int64_t origin = Timeline::clock_ns();
  ranks->broadcast(bytes(origin), 0);
  timeline.set_origin(origin - offset);
}

GatheredTimeline gather_timeline(const Timeline& timeline, Communicator* ranks) {
  GatheredTimeline out;
  if (!ranks) {
    out.ranks.push_back(timeline.tracks());
    return out;
  }
  const auto all = ranks->allgatherv(timeline.serialize());
  if (ranks->rank() != 0) return out;
  for (const auto& bytes : all) out.ranks.push_back(Timeline::deserialize(bytes, out.names));
  return out;
}

namespace {

std::string json_string(const std::string& text) { return nlohmann::json(text).dump(); }

// Microseconds with the nanoseconds kept (Chrome traces take fractions).
std::string micros(int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1000.0); }

// Rows in the order a reader looks for them: "worker 2" before "worker 10",
// each worker's comm thread under it, then the servers.
bool row_before(const std::string& a, const std::string& b) {
  auto key = [](const std::string& name) {
    const size_t digits = name.find_first_of("0123456789");
    if (digits == std::string::npos) return std::tuple(name, 0L, std::string());
    size_t end = digits;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    return std::tuple(name.substr(0, digits), std::stol(name.substr(digits, end - digits)), name.substr(end));
  };
  return key(a) < key(b);
}

}  // namespace

std::string chrome_trace_json(const GatheredTimeline& timeline) {
  std::string out = "{\"traceEvents\":[\n";
  bool first = true, truncated = false;
  auto line = [&](const std::string& event) {
    if (!first) out += ",\n";
    out += event;
    first = false;
  };
  const bool several = timeline.ranks.size() > 1;
  for (size_t rank = 0; rank < timeline.ranks.size(); ++rank) {
    line(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":{}}}}})", rank,
                     json_string(several ? fmt::format("rank {}", rank) : std::string("ptrain"))));
    line(fmt::format(R"({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})", rank, rank));
    std::vector<std::string> rows;
    for (const auto& track : timeline.ranks[rank]) rows.push_back(track.name);
    std::sort(rows.begin(), rows.end(), row_before);
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    std::map<std::string, int> tids;  // a track's name to its row
    for (const auto& name : rows) tids.emplace(name, static_cast<int>(tids.size()) + 1);
    std::set<std::string> named;
    for (const auto& track : timeline.ranks[rank]) {
      truncated = truncated || track.truncated;
      const int tid = tids.at(track.name);
      if (named.insert(track.name).second) {
        line(fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})", rank, tid,
                         json_string(track.name)));
        line(fmt::format(R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                         rank, tid, tid));
      }
      for (const auto& e : track.events) {
        const std::string args =
            e.arg_name ? fmt::format(R"(,"args":{{{}:{}}})", json_string(e.arg_name), e.arg) : std::string();
        line(fmt::format(R"({{"name":{},"ph":"X","ts":{},"dur":{},"pid":{},"tid":{}{}}})", json_string(e.name),
                         micros(e.start_ns), micros(e.duration_ns), rank, tid, args));
      }
    }
  }
  out += fmt::format("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{{\"ptrain\":{},\"truncated\":{}}}}}\n",
                     json_string(build_info().version), truncated ? "true" : "false");
  return out;
}

void write_timeline_file(const std::string& path, const GatheredTimeline& timeline) {
  write_text_file(path, chrome_trace_json(timeline), "run.timeline");
}

}  // namespace ptrain
