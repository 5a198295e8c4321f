// run()'s placement: the plan's run.placement on run.topology for the
// trainer's workers and shards and the shared-memory threads, in the result
// (the report's "placement"), and what the plan refuses.
#include <gtest/gtest.h>

#include "plan/plan_json.hpp"
#include "run/report.hpp"
#include "run/run_fixtures.hpp"
#include "test_support.hpp"
#include "topology/binding.hpp"

namespace ptrain {
namespace {

constexpr const char* kTwoNodes = "pack:2 node:1 core:2 pu:1";
constexpr const char* kFourNodes = "pack:1 group:4 node:1 core:2 pu:2";

RunResult run_placed(RunPlan plan, Placement placement, const std::string& topology) {
  plan.run.placement = placement;
  plan.run.topology = topology;
  plan.run.epochs = 0.25;
  World world = make_world(plan);
  return run(plan, world, {}, test::data_only(test::small_clusters()));
}

std::vector<std::string> where(const PlacementRecord& r) {
  std::vector<std::string> out;
  for (const PlacedThread& t : r.threads)
    out.push_back(fmt::format("{} {}: cpu {} node {}", t.role, t.index, t.place.cpu, t.place.node));
  return out;
}

TEST(PlacementRun, WorkersAreSpreadOverTheNodesOfASyntheticTopologyAndOnlyPlanned) {
  const RunResult r = run_placed(test::softmax_plan(4, 16, 1), Placement::Spread, kTwoNodes);
  EXPECT_EQ(where(r.placement), (std::vector<std::string>{"worker 0: cpu 0 node 0", "worker 1: cpu 2 node 1",
                                                          "worker 2: cpu 1 node 0", "worker 3: cpu 3 node 1"}));
  EXPECT_FALSE(r.placement.applied);
  for (const auto& t : r.placement.threads) EXPECT_FALSE(t.bound);
  EXPECT_EQ(r.placement.topology, std::string("synthetic '") + kTwoNodes + "'");
  EXPECT_EQ(r.placement.numa_nodes, 2);
}

TEST(PlacementRun, ParameterServerShardsArePlacedAfterTheWorkers) {
  RunPlan plan = test::softmax_plan(2, 16, 1);
  PsSyncOptions ps;
  ps.servers = 2;
  plan.strategy = ps;
  const RunResult r = run_placed(plan, Placement::Compact, kFourNodes);
  EXPECT_EQ(where(r.placement), (std::vector<std::string>{"worker 0: cpu 0 node 0", "worker 1: cpu 2 node 0",
                                                          "shard 0: cpu 4 node 1", "shard 1: cpu 6 node 1"}));
}

TEST(PlacementRun, SharedMemoryThreadsAndTheirSharedParameters) {
  RunPlan plan = test::softmax_plan(2, 16, 1);
  plan.strategy = HogwildOptions{};
  RunResult r = run_placed(plan, Placement::Spread, kFourNodes);
  EXPECT_EQ(where(r.placement), (std::vector<std::string>{"thread 0: cpu 0 node 0", "thread 1: cpu 4 node 1"}));
  EXPECT_EQ(r.placement.shared_nodes, (std::vector<int>{0, 1}));
  r = run_placed(plan, Placement::Compact, kFourNodes);
  EXPECT_EQ(r.placement.shared_nodes, (std::vector<int>{0}));
  EXPECT_EQ(r.shared_memory->cpus, (std::vector<int>{-1, -1}));  // planned, not bound
}

// This machine: every worker and thread bound where the plan says.
TEST(PlacementRun, OnThisMachineEveryThreadIsBoundAsPlanned) {
  const auto here = Topology::load("");
  for (bool shared_memory : {false, true}) {
    RunPlan plan = test::softmax_plan(2, 16, 1);
    if (shared_memory) plan.strategy = LeashedOptions{};
    const RunResult r = run_placed(plan, Placement::Compact, "");
    EXPECT_TRUE(r.placement.applied);
    EXPECT_EQ(r.placement.topology, "this machine");
    ASSERT_EQ(r.placement.threads.size(), 2u);
    for (int i = 0; i < 2; ++i) {
      const PlacedThread& t = r.placement.threads[static_cast<size_t>(i)];
      EXPECT_TRUE(t.bound);
      EXPECT_EQ(t.place, thread_place(here->slots(), Placement::Compact, i));
    }
    if (shared_memory) {
      EXPECT_EQ(r.shared_memory->cpus, (std::vector<int>{r.placement.threads[0].place.cpu, r.placement.threads[1].place.cpu}));
      EXPECT_EQ(r.placement.shared_nodes, std::vector<int>{r.placement.threads[0].place.node});
    }
  }
  const RunResult none = run_placed(test::softmax_plan(2, 16, 1), Placement::None, "");
  for (const auto& t : none.placement.threads) EXPECT_FALSE(t.bound || t.place.placed());
}

TEST(PlacementRun, TheReportHoldsThePlacement) {
  RunPlan plan = test::softmax_plan(2, 16, 1);
  plan.strategy = HogwildOptions{};
  plan.run.placement = Placement::Spread;
  plan.run.topology = kTwoNodes;
  const RunResult r = run_placed(plan, Placement::Spread, kTwoNodes);
  World world = make_world(plan);
  const auto report = make_report(plan, world, r, {});
  const auto& p = report["placement"];
  EXPECT_EQ(p["policy"], "spread");
  EXPECT_EQ(p["numa_nodes"], 2);
  EXPECT_EQ(p["cores"], 4);
  EXPECT_EQ(p["applied"], false);
  EXPECT_EQ(p["threads"][1]["node"], 1);
  EXPECT_EQ(p["threads"][1]["cpu"], 2);
  EXPECT_EQ(p["threads"][1]["role"], "thread");
  EXPECT_EQ(p["shared_parameters"]["policy"], "interleave");
  EXPECT_EQ(p["shared_parameters"]["nodes"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(report["plan"]["run"]["placement"], "spread");
  EXPECT_EQ(report["plan"]["run"]["topology"], kTwoNodes);
}

TEST(PlacementRun, ATopologyThatCannotBeLoadedIsRefusedBeforeTraining) {
  RunPlan plan = test::softmax_plan(2, 16, 1);
  plan.run.topology = "bogus:3";
  World world = make_world(plan);
  EXPECT_EQ(test::error_message([&] { run(plan, world, {}, test::data_only(test::small_clusters())); }),
            "run.topology: 'bogus:3': not a synthetic topology hwloc accepts (e.g. 'pack:2 node:1 core:2 pu:1'), nor "
            "a path ending in .xml");
}

RunPlan plan_of(const std::string& run_json, Problems& problems) {
  return plan_from_json(nlohmann::json::parse(R"({"run": )" + run_json + "}"), RunPlan{}, "", problems);
}

// Plans, reports and checkpoints from before run.placement said run.pin.
TEST(PlacementRun, AnOlderPlansPinIsReadAsThePlacement) {
  Problems problems;
  EXPECT_EQ(plan_of(R"({"pin": true})", problems).run.placement, Placement::Compact);
  EXPECT_EQ(plan_of(R"({"pin": false})", problems).run.placement, Placement::None);
  EXPECT_TRUE(problems.empty()) << problems.joined();
  plan_of(R"({"pin": false, "placement": "spread"})", problems);
  plan_of(R"({"pin": "yes"})", problems);
  EXPECT_EQ(problems.joined(),
            "run.pin is the older name of run.placement: give one of them; run.pin: expected true or false, got "
            "\"yes\"");
  Problems unknown;
  plan_of(R"({"placement": "scatter"})", unknown);
  EXPECT_NE(unknown.joined().find("run.placement"), std::string::npos) << unknown.joined();
  EXPECT_NE(unknown.joined().find("none, compact, spread"), std::string::npos) << unknown.joined();
}

}  // namespace
}  // namespace ptrain
