// What one timeline span costs (core/timeline.hpp), with no timeline active
// (every run without --timeline) and with one (each span recorded): the
// figures behind docs/benchmarks.md's timeline cost, beside
// bench/timeline_overhead.sh's whole runs.
#include <benchmark/benchmark.h>

#include "core/timeline.hpp"

namespace {

void span_with_no_timeline(benchmark::State& state) {
  ptrain::TimelineThread thread("bench");  // no active timeline: binds nothing
  for (auto _ : state) {
    ptrain::TimelineSpan span("forward", "step", 1);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(span_with_no_timeline);

void span_recorded(benchmark::State& state) {
  ptrain::Timeline timeline(static_cast<size_t>(1) << 26);
  ptrain::ActiveTimeline active(timeline);
  ptrain::TimelineThread thread("bench");
  for (auto _ : state) {
    ptrain::TimelineSpan span("forward", "step", 1);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(span_recorded);

}  // namespace

BENCHMARK_MAIN();
