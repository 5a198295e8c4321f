#pragma once
// The run's timeline (core/timeline.hpp) as a Chrome trace file: one JSON
// object whose traceEvents open in Perfetto (ui.perfetto.dev) and
// chrome://tracing. A process per MPI rank (pid = rank; one with threads), a
// thread per track (tid), complete events ("ph":"X") with their start and
// duration in microseconds from the run's start, and metadata events naming
// the processes and tracks.
#include <set>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/timeline.hpp"

namespace ptrain {

// Starts every rank's timeline at rank 0's present moment, each on its own
// clock: a rank's offset from rank 0's clock is taken from the quickest of a
// few round trips of clock readings (as NTP does), so that ranks on other
// hosts, or descheduled on a busy one, still share one clock to within half
// that round trip. Every rank of `ranks` calls it; none: the origin is now.
void start_timeline_clocks(Timeline& timeline, Communicator* ranks);

// Every rank's tracks, gathered on the rank that writes the file (rank 0 of
// `ranks`; all of them with no communicator: one process). Every rank calls it.
struct GatheredTimeline {
  std::vector<std::vector<TimelineTrack>> ranks;  // on the writing rank: index = rank
  std::set<std::string> names;                    // what the gathered events' names point into
};
GatheredTimeline gather_timeline(const Timeline& timeline, Communicator* ranks);

// The Chrome trace JSON of `timeline`. Tracks of one rank with the same name
// (a worker's thread again after a restart) share a row.
std::string chrome_trace_json(const GatheredTimeline& timeline);

// Writes it to `path` atomically (complete or absent, never through a symlink).
void write_timeline_file(const std::string& path, const GatheredTimeline& timeline);

}  // namespace ptrain
