// Placements planned on synthetic and XML topologies of 2 and 4 NUMA nodes
// (each thread's CPU, core and node; threads in MPI ranks after the host's
// lower ranks'; the shared parameters' nodes), bound for real on this
// machine (checked with hwloc's get functions), and topologies refused.
#include <gtest/gtest.h>
#include <hwloc.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "core/error.hpp"
#include "test_support.hpp"
#include "topology/placer.hpp"

namespace ptrain {
namespace {

constexpr const char* kTwoNodes = "pack:2 node:1 core:2 pu:1";        // 4 cores, 2 a node
constexpr const char* kFourNodes = "pack:1 group:4 node:1 core:2 pu:2";  // 8 cores of 2 PUs, 2 cores a node

std::vector<ThreadPlace> planned(const Placer& placer, int threads) {
  std::vector<ThreadPlace> out;
  for (int i = 0; i < threads; ++i) out.push_back(placer.place(i));
  return out;
}

std::vector<int> cpus_of(const std::vector<ThreadPlace>& places) {
  std::vector<int> out;
  for (const auto& p : places) out.push_back(p.cpu);
  return out;
}

std::vector<int> nodes_of(const std::vector<ThreadPlace>& places) {
  std::vector<int> out;
  for (const auto& p : places) out.push_back(p.node);
  return out;
}

TEST(PlacementTopology, SyntheticTopologiesHaveTheirNodesAndCoresAndAreNotThisMachine) {
  const auto two = Topology::load(kTwoNodes);
  EXPECT_FALSE(two->is_this_system());
  EXPECT_EQ(two->numa_nodes(), 2);
  EXPECT_EQ(two->cores(), 4);
  EXPECT_EQ(two->description(), std::string("synthetic '") + kTwoNodes + "'");
  const auto four = Topology::load(kFourNodes);
  EXPECT_EQ(four->numa_nodes(), 4);
  EXPECT_EQ(four->cores(), 8);
  EXPECT_EQ(four->slots().size(), 16u);
}

TEST(PlacementPlan, CompactOnTwoNodesFillsTheCoresInOrderThenWraps) {
  const Placer placer(Topology::load(kTwoNodes), Placement::Compact);
  const auto places = planned(placer, 6);
  EXPECT_EQ(cpus_of(places), (std::vector<int>{0, 1, 2, 3, 0, 1}));
  EXPECT_EQ(nodes_of(places), (std::vector<int>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(places[3].core, 3);
}

TEST(PlacementPlan, SpreadOnTwoNodesAlternatesTheNodes) {
  const Placer placer(Topology::load(kTwoNodes), Placement::Spread);
  const auto places = planned(placer, 6);
  EXPECT_EQ(cpus_of(places), (std::vector<int>{0, 2, 1, 3, 0, 2}));
  EXPECT_EQ(nodes_of(places), (std::vector<int>{0, 1, 0, 1, 0, 1}));
}

TEST(PlacementPlan, NonePlacesNothing) {
  const Placer placer(Topology::load(kFourNodes), Placement::None);
  for (const auto& p : planned(placer, 3)) EXPECT_FALSE(p.placed());
  EXPECT_TRUE(placer.shared_nodes(3).empty());
  EXPECT_FALSE(Placer().place(0).placed());  // the default Placer, without a topology
}

TEST(PlacementPlan, CompactOnFourNodesTakesEveryCoreBeforeASecondHardwareThread) {
  const Placer placer(Topology::load(kFourNodes), Placement::Compact);
  const auto places = planned(placer, 10);
  EXPECT_EQ(cpus_of(places), (std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14, 1, 3}));
  EXPECT_EQ(nodes_of(places), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3, 0, 0}));
  EXPECT_EQ(places[8].core, 0);  // core 0's second PU
}

TEST(PlacementPlan, SpreadOnFourNodesGoesRoundTheNodesThenTheirCores) {
  const Placer placer(Topology::load(kFourNodes), Placement::Spread);
  const auto places = planned(placer, 9);
  EXPECT_EQ(nodes_of(places), (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3, 0}));
  EXPECT_EQ(cpus_of(places), (std::vector<int>{0, 4, 8, 12, 2, 6, 10, 14, 1}));
}

TEST(PlacementPlan, ThreadsInAnMpiRankStartAfterThoseOfTheHostsLowerRanks) {
  // Host slot 1 of ranks with 2 worker threads each: its threads are the host's 2 and 3.
  const auto two = Topology::load(kTwoNodes);
  EXPECT_EQ(cpus_of(planned(Placer(two, Placement::Compact, 2), 2)), (std::vector<int>{2, 3}));
  EXPECT_EQ(cpus_of(planned(Placer(two, Placement::Spread, 2), 2)), (std::vector<int>{1, 3}));
  EXPECT_EQ(nodes_of(planned(Placer(two, Placement::Spread, 2), 2)), (std::vector<int>{0, 1}));
}

TEST(PlacementPlan, SharedParametersGoToThreadZerosNodeOrAreInterleavedOverTheThreads) {
  const auto four = Topology::load(kFourNodes);
  EXPECT_EQ(Placer(four, Placement::Compact).shared_nodes(8), (std::vector<int>{0}));
  EXPECT_EQ(Placer(four, Placement::Compact, 4).shared_nodes(2), (std::vector<int>{2}));
  EXPECT_EQ(Placer(four, Placement::Spread).shared_nodes(3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(Placer(four, Placement::Spread).shared_nodes(16), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(Placer(four, Placement::Spread).shared_nodes(1), (std::vector<int>{0}));
}

TEST(PlacementPlan, OnASyntheticTopologyNothingIsBound) {
  const auto here = Topology::load("");
  const std::vector<int> before = current_thread_cpus(*here);
  const Placer placer(Topology::load(kTwoNodes), Placement::Spread);
  EXPECT_FALSE(placer.binds());
  const PlacedThread t = placer.bind_current_thread("worker", 1, 1);
  EXPECT_EQ(t.place.cpu, 2);
  EXPECT_EQ(t.place.node, 1);
  EXPECT_FALSE(t.bound);
  EXPECT_EQ(current_thread_cpus(*here), before);
  const PlacementRecord record = placer.record();
  EXPECT_FALSE(record.applied);
  EXPECT_EQ(record.numa_nodes, 2);
  EXPECT_NE(placement_summary(record).find("planned, not bound"), std::string::npos);
}

// An hwloc XML file of the synthetic topology `description`, as lstopo would write it.
std::string xml_file_of(const char* description, const std::string& path) {
  hwloc_topology_t t;
  hwloc_topology_init(&t);
  hwloc_topology_set_synthetic(t, description);
  hwloc_topology_load(t);
  EXPECT_EQ(hwloc_topology_export_xml(t, path.c_str(), 0), 0);
  hwloc_topology_destroy(t);
  return path;
}

TEST(PlacementTopology, AnXmlFileGivesTheSamePlanAsItsSyntheticTopology) {
  test::ScratchDir dir;
  const std::string path = xml_file_of(kFourNodes, dir.file("four.xml"));
  const auto xml = Topology::load(path);
  EXPECT_FALSE(xml->is_this_system());
  EXPECT_EQ(xml->numa_nodes(), 4);
  EXPECT_EQ(xml->description(), "XML file " + path);
  for (Placement p : {Placement::Compact, Placement::Spread})
    EXPECT_EQ(planned(Placer(xml, p), 9), planned(Placer(Topology::load(kFourNodes), p), 9));
}

std::string load_error(const std::string& source) {
  try {
    Topology::load(source);
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(PlacementTopology, TopologiesThatCannotBeReadAreRefusedNamingThem) {
  test::ScratchDir dir;
  EXPECT_EQ(load_error("bogus:3"),
            "'bogus:3': not a synthetic topology hwloc accepts (e.g. 'pack:2 node:1 core:2 pu:1'), nor a path "
            "ending in .xml");
  EXPECT_NE(load_error(dir.file("none.xml")).find("none.xml': no such file"), std::string::npos)
      << load_error(dir.file("none.xml"));
  std::ofstream(dir.file("junk.xml")) << "<topology><object type=";
  EXPECT_NE(load_error(dir.file("junk.xml")).find("not an XML topology hwloc can read"), std::string::npos);
  std::ofstream(dir.file("empty.xml"));
  EXPECT_NE(load_error(dir.file("empty.xml")).find("not an XML topology hwloc can read"), std::string::npos);
  // A FIFO is refused, not waited on; a description of a huge machine is refused, not built.
  ASSERT_EQ(mkfifo((dir.file("fifo.xml")).c_str(), 0600), 0);
  EXPECT_NE(load_error(dir.file("fifo.xml")).find("FIFO"), std::string::npos);
  EXPECT_EQ(load_error("pack:1000 core:1000 pu:1000"),
            "'pack:1000 core:1000 pu:1000': describes more than 65536 processing units");
  EXPECT_NE(load_error(dir.path().string()).find("not a synthetic topology"), std::string::npos);  // a directory
  // Nested deeper than any machine: refused before hwloc's reader recurses into it.
  std::string deep = "<topology version=\"2.0\">";
  for (int i = 0; i < 300; ++i) deep += "<object type=\"Group\">";
  for (int i = 0; i < 300; ++i) deep += "</object>";
  std::ofstream(dir.file("deep.xml")) << deep << "</topology>";
  EXPECT_NE(load_error(dir.file("deep.xml")).find("deep.xml': its elements nest more than 256 deep"),
            std::string::npos)
      << load_error(dir.file("deep.xml"));
}

// This machine: threads bound for real, as hwloc then reports them.
TEST(PlacementBinding, AThreadIsBoundToItsCpuAndItsMemoryToItsNode) {
  const auto here = Topology::load("");
  ASSERT_TRUE(here->is_this_system());
  ASSERT_FALSE(here->slots().empty());
  for (Placement policy : {Placement::Compact, Placement::Spread}) {
    const Placer placer(here, policy);
    for (int i = 0; i < 3; ++i) {
      std::thread([&] {
        const PlacedThread t = placer.bind_current_thread("worker", i, i);
        EXPECT_TRUE(t.bound);
        EXPECT_EQ(t.place, thread_place(here->slots(), policy, i));
        EXPECT_EQ(current_thread_cpus(*here), std::vector<int>{t.place.cpu});
        const MemoryBinding memory = current_thread_memory(*here);
        EXPECT_EQ(memory.nodes, std::vector<int>{t.place.node});
        EXPECT_EQ(memory.policy, "bind");
        // What it allocates and touches lands on that node.
        std::vector<float> buffer(1 << 18, 1.0f);
        EXPECT_EQ(area_location(*here, buffer.data(), buffer.size() * sizeof(float)),
                  std::vector<int>{t.place.node});
      }).join();
    }
  }
}

TEST(PlacementBinding, NoneLeavesTheThreadWhereItWas) {
  const auto here = Topology::load("");
  std::thread([&] {
    const std::vector<int> before = current_thread_cpus(*here);
    const MemoryBinding memory_before = current_thread_memory(*here);
    const PlacedThread t = Placer(here, Placement::None).bind_current_thread("worker", 0, 0);
    EXPECT_FALSE(t.bound);
    EXPECT_FALSE(t.place.placed());
    EXPECT_EQ(current_thread_cpus(*here), before);
    EXPECT_EQ(current_thread_memory(*here).policy, memory_before.policy);
  }).join();
}

TEST(PlacementBinding, AnAllocationPolicyHoldsWhileItLivesAndIsThenUndone) {
  const auto here = Topology::load("");
  const Placer placer(here, Placement::Compact);
  std::thread([&] {
    const MemoryBinding before = current_thread_memory(*here);
    {
      const AllocationPolicy near = placer.allocations_near(1);
      EXPECT_TRUE(near.applied());
      const MemoryBinding during = current_thread_memory(*here);
      EXPECT_EQ(during.policy, "bind");
      EXPECT_EQ(during.nodes, std::vector<int>{placer.place(1).node});
      std::vector<float> buffer(1 << 18, 2.0f);
      EXPECT_EQ(area_location(*here, buffer.data(), buffer.size() * sizeof(float)),
                std::vector<int>{placer.place(1).node});
    }
    EXPECT_EQ(current_thread_memory(*here).policy, before.policy);
    // The shared parameters of a compact run: thread 0's node.
    const AllocationPolicy shared = placer.allocations_for_shared(2);
    EXPECT_EQ(current_thread_memory(*here).nodes, std::vector<int>{placer.place(0).node});
  }).join();
}

TEST(PlacementRecord, TheSummaryLineSaysThePolicyTheTopologyAndEachThread) {
  const Placer placer(Topology::load(kFourNodes), Placement::Spread);
  PlacementRecord r = placer.record({placer.bind_current_thread("thread", 0, 0), placer.bind_current_thread("thread", 1, 1)});
  r.shared_nodes = placer.shared_nodes(2);
  EXPECT_EQ(placement_summary(r),
            std::string("spread on synthetic '") + kFourNodes +
                "' (4 NUMA nodes, 8 cores), planned, not bound (not this machine): thread 0 cpu 0 node 0, thread 1 "
                "cpu 4 node 1; shared parameters interleaved over nodes 0,1");
}

}  // namespace
}  // namespace ptrain
