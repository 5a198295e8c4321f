#pragma once
// The cores and NUMA nodes threads are placed on, as hwloc sees them: this
// machine's (the processing units this process may run on), or a machine
// described to hwloc, an XML file (lstopo writes one) or a synthetic
// description ("pack:2 node:1 core:2 pu:1"), on which a placement is planned
// but nothing is bound: hwloc binds only the threads of the machine it runs on.
#include <memory>
#include <string>
#include <vector>

namespace ptrain {

// One processing unit (a hardware thread) a thread may be placed on.
struct CpuSlot {
  int cpu = -1;   // the PU's OS index: what taskset, /proc and ps call a CPU
  int core = -1;  // its core's logical index (hwloc's, 0 up)
  int node = -1;  // its NUMA node's OS index (what numactl calls a node)
};

class Topology {
 public:
  // `source`: "" this machine (or what HWLOC_XMLFILE or HWLOC_SYNTHETIC
  // describe instead); a path ending in ".xml": hwloc's XML; anything else:
  // hwloc's synthetic description. Throws ptrain::Error naming the source when
  // the file cannot be read or hwloc refuses it.
  static std::shared_ptr<const Topology> load(const std::string& source);
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  // Threads placed on it can be bound (it is the machine this process runs on).
  bool is_this_system() const { return this_system_; }
  // "this machine", "synthetic 'pack:2 node:1 core:2 pu:1'", "XML file t.xml".
  const std::string& description() const { return description_; }
  int numa_nodes() const { return numa_nodes_; }
  int cores() const { return cores_; }
  // The PUs threads may take, in compact order: the first PU of every core
  // in order, then the second of every core that has two, and so on.
  const std::vector<CpuSlot>& slots() const { return slots_; }

  struct Hwloc;  // the loaded hwloc topology (topology/hwloc_handle.hpp)
  const Hwloc& hwloc() const { return *hwloc_; }

 private:
  Topology() = default;
  std::unique_ptr<Hwloc> hwloc_;
  bool this_system_ = false;
  std::string description_;
  int numa_nodes_ = 0, cores_ = 0;
  std::vector<CpuSlot> slots_;
};

}  // namespace ptrain
