// What a run records besides its report, through the ptrain program: the
// metrics stream (--metrics) a killed run keeps up to its last line, and the
// timeline (--timeline) of every worker, server and rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "run_ptrain.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::Outcome;
using test::run_ptrain;
using test::run_ptrain_with_env;

// mpirun -q: without its banner.
const char* kQuietMpirun = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -q --oversubscribe";

using test::read_json;

struct Span {
  std::string name;
  double start = 0, end = 0;  // microseconds
  int64_t arg = -1;
};

// The complete events of a Chrome trace, by (pid, track name), in file order.
std::map<std::pair<int, std::string>, std::vector<Span>> spans_by_track(const nlohmann::json& trace) {
  std::map<std::pair<int, int>, std::string> track_names;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") track_names[{e["pid"], e["tid"]}] = e["args"]["name"];
  std::map<std::pair<int, std::string>, std::vector<Span>> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    Span s{e["name"], e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>(), -1};
    if (e.contains("args") && !e["args"].empty()) s.arg = e["args"].begin()->get<int64_t>();
    out[{e["pid"].get<int>(), track_names.at({e["pid"], e["tid"]})}].push_back(s);
  }
  return out;
}

std::vector<Span> named(const std::vector<Span>& spans, const std::string& name) {
  std::vector<Span> out;
  for (const auto& s : spans)
    if (s.name == name) out.push_back(s);
  return out;
}

// A run killed (SIGKILL) 10 s in has every line of its curve up to the kill:
// a start, a step line every log_every steps with none missing, an epoch line
// for each epoch those steps finished, and no end.
TEST(PtrainRecording, AKilledRunKeepsItsMetricsUpToTheLastLine) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const std::string metrics = dir.file("m.jsonl");
  // 6000 samples, 2 workers x batch 32: 93 steps an epoch; far more epochs than 10 s hold.
  const std::string command = std::string(PTRAIN_EXE) +
                              " train -q --workers 2 --train-samples 6000 --epochs 1000 --log-every 5 --metrics " +
                              metrics + " & pid=$!; sleep 10; kill -KILL $pid; wait $pid";
  const int status = std::system(("bash -c '" + command + "'").c_str());
  ASSERT_EQ(WEXITSTATUS(status), 128 + 9) << "the run was not killed";
  std::ifstream in(metrics);
  std::vector<nlohmann::json> events;
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (in.eof()) {  // a line with no newline: cut by the kill
      last = line;
      break;
    }
    events.push_back(nlohmann::json::parse(line));  // every whole line is whole JSON
  }
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front()["event"], "start");
  EXPECT_EQ(events.front()["plan"]["run"]["log_every"], 5);
  size_t steps = 0, epochs = 0;
  for (const auto& e : events) {
    EXPECT_NE(e["event"], "end");
    if (e["event"] == "step") {
      EXPECT_EQ(e["step"].get<size_t>(), steps + 5) << "a step line is missing";
      steps = e["step"];
    }
    if (e["event"] == "epoch") {
      EXPECT_EQ(e["epoch"].get<size_t>(), ++epochs);
    }
  }
  EXPECT_GT(steps, 93u) << "ran less than an epoch in 10 s";
  // An epoch's line follows its last step; at most the epoch in flight has none yet.
  // Steps are logged every 5: an epoch may end up to 4 steps after the last logged one.
  EXPECT_GE(epochs + 1, steps / 93);
  EXPECT_LE(epochs * 93, steps + 4);
}

// Hybrid with a gradient in several buckets, on threads: a track per worker
// and per worker's communication thread; each worker's steps hold a forward
// and a backward inside them; each bucket is all-reduced once a step on the
// communication thread, and the worker waits for it and updates it.
TEST(PtrainRecording, TimelineOfHybridHasEveryWorkersSteps) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const Outcome o = run_ptrain("train -q --workers 3 --model cnn --bucket-size 64KiB --train-samples 960 "
                               "--epochs 1 --timeline " + dir.file("t.json") + " --report " + dir.file("r.json"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto report = read_json(dir.file("r.json"));
  const size_t steps = report["summary"]["steps"];
  const auto trace = read_json(dir.file("t.json"));
  EXPECT_EQ(trace["otherData"]["truncated"], false);
  const auto tracks = spans_by_track(trace);
  for (int w = 0; w < 3; ++w) {
    const auto& mine = tracks.at({0, "worker " + std::to_string(w)});
    const auto step_spans = named(mine, "step");
    ASSERT_EQ(step_spans.size(), steps);
    for (size_t k = 0; k < steps; ++k) EXPECT_EQ(step_spans[k].arg, static_cast<int64_t>(k + 1));
    const auto forward = named(mine, "forward"), backward = named(mine, "backward");
    ASSERT_EQ(forward.size(), steps);
    ASSERT_EQ(backward.size(), steps);
    for (size_t k = 0; k < steps; ++k) {
      EXPECT_LE(step_spans[k].start, forward[k].start);
      EXPECT_LE(forward[k].end, backward[k].start);
      EXPECT_LE(backward[k].end, step_spans[k].end);
    }
    const auto comm = tracks.at({0, "worker " + std::to_string(w) + " comm"});
    const auto reduced = named(comm, "all-reduce");
    ASSERT_GT(reduced.size(), steps);  // several buckets a step
    EXPECT_EQ(reduced.size() % steps, 0u);
    EXPECT_EQ(named(mine, "optimizer").size(), reduced.size());
    EXPECT_FALSE(named(mine, "wait").empty());
  }
  EXPECT_EQ(named(tracks.at({0, "worker 0"}), "evaluation").size(), 1u);
}

// Parameter servers on threads: the servers' tracks hold one apply per update
// the report counts, the workers' their pushes and pulls; the straggler's
// delay is on its own track only. Worker 0 straggles, so that the others take
// more steps than its clock saw.
TEST(PtrainRecording, TimelineOfAsyncServersHasEveryUpdate) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const Outcome o = run_ptrain("train -q --workers 3 --strategy async --servers 2 --compress topk --straggler 0:2 "
                               "--train-samples 960 --epochs 1 --timeline " + dir.file("t.json") + " --report " +
                               dir.file("r.json"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto report = read_json(dir.file("r.json"));
  const auto tracks = spans_by_track(read_json(dir.file("t.json")));
  // Worker 0's clock stops at its last step: the loss points past it have no time, not time 0.
  double last_seconds = 0;
  for (const auto& point : report["loss_curve"]) {
    if (point["seconds"].is_null()) continue;
    EXPECT_GE(point["seconds"].get<double>(), last_seconds) << point;
    last_seconds = point["seconds"];
  }
  for (int s = 0; s < 2; ++s)
    EXPECT_EQ(named(tracks.at({0, "server " + std::to_string(s)}), "apply").size(),
              report["parameter_server"]["per_shard"][s]["updates"].get<size_t>());
  for (int w = 0; w < 3; ++w) {
    const auto& mine = tracks.at({0, "worker " + std::to_string(w)});
    const size_t steps = report["parameter_server"]["worker_steps"][w];
    EXPECT_EQ(named(mine, "push").size(), steps);
    EXPECT_EQ(named(mine, "encode").size(), 2 * steps);  // one per shard
    EXPECT_GE(named(mine, "pull").size(), steps);
    EXPECT_EQ(named(mine, "straggler delay").size(), w == 0 ? steps : 0u);
  }
}

// Under mpirun, rank 0 writes every rank's events into the one file, on one
// clock: each step's all-reduce, which no rank can finish before every rank
// has begun it, overlaps across the ranks.
TEST(PtrainRecording, TimelineUnderMpirunHasEveryRankOnOneClock) {
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const Outcome o = run_ptrain_with_env(std::string(kQuietMpirun) + " -np 3",
                                        "train -q --train-samples 1920 --epochs 1 --no-overlap --timeline " +
                                            dir.file("t.json"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto trace = read_json(dir.file("t.json"));
  std::set<std::string> processes;
  for (const auto& e : trace["traceEvents"])
    if (e["name"] == "process_name") processes.insert(e["args"]["name"].get<std::string>());
  EXPECT_EQ(processes, (std::set<std::string>{"rank 0", "rank 1", "rank 2"}));
  const auto tracks = spans_by_track(trace);
  std::vector<std::vector<Span>> reduced;
  for (int r = 0; r < 3; ++r) reduced.push_back(named(tracks.at({r, "worker " + std::to_string(r)}), "all-reduce"));
  ASSERT_EQ(reduced[1].size(), reduced[0].size());
  ASSERT_EQ(reduced[2].size(), reduced[0].size());
  ASSERT_GT(reduced[0].size(), 10u);
  constexpr double kSkewMicros = 1000;  // the barrier the clocks start after
  for (size_t k = 0; k < reduced[0].size(); ++k) {
    double latest_start = 0, earliest_end = 1e18;
    for (const auto& rank : reduced) latest_start = std::max(latest_start, rank[k].start);
    for (const auto& rank : reduced) earliest_end = std::min(earliest_end, rank[k].end);
    EXPECT_LE(latest_start, earliest_end + kSkewMicros) << "all-reduce " << k;
  }
}

// The shared-memory strategies record each thread's reads and applies, and
// the checks of the loss on the thread that runs them.
TEST(PtrainRecording, TimelineOfSharedMemoryThreads) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const Outcome o = run_ptrain("shm -q --threads 2 --strategy mutex --train-samples 960 --epochs 1 --timeline " +
                               dir.file("t.json") + " --report " + dir.file("r.json"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto report = read_json(dir.file("r.json"));
  const auto tracks = spans_by_track(read_json(dir.file("t.json")));
  const size_t applies = named(tracks.at({0, "thread 0"}), "apply").size() +
                         named(tracks.at({0, "thread 1"}), "apply").size();
  EXPECT_EQ(applies, report["shared_memory"]["gradients"].get<size_t>());
  EXPECT_EQ(named(tracks.at({0, "loss checks"}), "loss check").size(), report["loss_curve"].size());
}

}  // namespace
}  // namespace ptrain
