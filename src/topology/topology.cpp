#include "topology/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/printable.hpp"
#include "topology/hwloc_handle.hpp"

namespace ptrain {

namespace {

// Synthetic descriptions multiply their arities: "pu:100000000" would have
// hwloc build as many objects. More PUs than this is refused as bad input.
constexpr double kMostSyntheticPus = 1 << 16;
constexpr size_t kMostXmlBytes = size_t{64} << 20;

// The product of a synthetic description's arities ("pack:2 core:4" is 8),
// attributes in parentheses left out.
double synthetic_pus(const std::string& text) {
  double pus = 1;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && depth > 0) --depth;
    if (depth > 0 || text[i] != ':') continue;
    double arity = 0;
    for (size_t j = i + 1; j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])); ++j)
      arity = arity * 10 + (text[j] - '0');
    if (arity > 0) pus *= arity;
  }
  return pus;
}

// hwloc's XML reader descends one call per nested element: a file nested
// deeper than any machine (a few levels: package, cache, core, PU) would
// overflow the stack, so it is refused before hwloc reads it.
constexpr int kDeepestXml = 256;

// How deep the elements of `text` nest, as far as tags say (<a>, </a>, <a/>).
int xml_depth(const std::string& text) {
  int depth = 0, deepest = 0;
  for (size_t at = text.find('<'); at != std::string::npos; at = text.find('<', at + 1)) {
    const char next = at + 1 < text.size() ? text[at + 1] : '\0';
    if (next == '/') {
      --depth;
    } else if (next != '?' && next != '!') {
      const size_t end = text.find('>', at);
      if (end == std::string::npos) break;
      if (text[end - 1] != '/') deepest = std::max(deepest, ++depth);
    }
  }
  return deepest;
}

bool is_xml_path(const std::string& source) { return source.size() >= 4 && source.ends_with(".xml"); }

// The allowed PUs of each core, in core order (a topology without core
// objects has each PU as its own core).
std::vector<std::vector<hwloc_obj_t>> pus_by_core(hwloc_topology_t t, hwloc_const_cpuset_t allowed) {
  std::vector<std::vector<hwloc_obj_t>> cores;
  const int core_count = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  if (core_count <= 0) {
    for (hwloc_obj_t pu = nullptr; (pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, pu));)
      if (hwloc_bitmap_isincluded(pu->cpuset, allowed)) cores.push_back({pu});
    return cores;
  }
  for (hwloc_obj_t core = nullptr; (core = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_CORE, core));) {
    std::vector<hwloc_obj_t> pus;
    for (hwloc_obj_t pu = nullptr; (pu = hwloc_get_next_obj_inside_cpuset_by_type(t, core->cpuset, HWLOC_OBJ_PU, pu));)
      if (hwloc_bitmap_isincluded(pu->cpuset, allowed)) pus.push_back(pu);
    if (!pus.empty()) cores.push_back(std::move(pus));
  }
  return cores;
}

// The logical index of `pu`'s core (of the PU itself when there are no cores).
int core_of(hwloc_topology_t t, hwloc_obj_t pu) {
  const hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu);
  return static_cast<int>(core ? core->logical_index : pu->logical_index);
}

// The NUMA node local to `pu`: the first whose cores include it (-1: none).
int node_of(hwloc_topology_t t, hwloc_obj_t pu) {
  for (hwloc_obj_t node = nullptr; (node = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, node));)
    if (hwloc_bitmap_isincluded(pu->cpuset, node->cpuset)) return static_cast<int>(node->os_index);
  return -1;
}

}  // namespace

Topology::~Topology() = default;

std::shared_ptr<const Topology> Topology::load(const std::string& source) {
  std::shared_ptr<Topology> out(new Topology());
  out->hwloc_ = std::make_unique<Hwloc>();
  if (hwloc_topology_init(&out->hwloc_->topology) != 0) throw Error("hwloc: cannot make a topology (out of memory?)");
  hwloc_topology_t t = out->hwloc_->topology;
  const std::string shown = "'" + printable(source, 200) + "'";
  if (is_xml_path(source)) {
    // Read here, as every input file is (a FIFO refused, not waited on); hwloc parses the text.
    const std::string text = read_input_file(source, kMostXmlBytes, "an hwloc XML topology", shown);
    if (xml_depth(text) > kDeepestXml)
      throw Error(fmt::format("{}: its elements nest more than {} deep; no machine's do", shown, kDeepestXml));
    if (hwloc_topology_set_xmlbuffer(t, text.c_str(), static_cast<int>(text.size() + 1)) != 0 ||
        hwloc_topology_load(t) != 0)
      throw Error(shown + ": not an XML topology hwloc can read (lstopo FILE.xml writes one)");
    out->description_ = "XML file " + printable(source, 200);
  } else if (!source.empty()) {
    if (synthetic_pus(source) > kMostSyntheticPus)
      throw Error(fmt::format("{}: describes more than {} processing units", shown, kMostSyntheticPus));
    if (hwloc_topology_set_synthetic(t, source.c_str()) != 0 || hwloc_topology_load(t) != 0)
      throw Error(shown + ": not a synthetic topology hwloc accepts (e.g. 'pack:2 node:1 core:2 pu:1'), nor a "
                          "path ending in .xml");
    out->description_ = "synthetic " + shown;
  } else {
    if (hwloc_topology_load(t) != 0) throw Error("hwloc: cannot read this machine's topology: " + errno_text());
    out->description_ = "this machine";
  }
  out->this_system_ = hwloc_topology_is_thissystem(t) == 1;
  if (source.empty() && !out->this_system_)
    out->description_ = "the machine HWLOC_XMLFILE or HWLOC_SYNTHETIC describes (not this one)";

  // On this machine, only the PUs the calling thread may run on (taskset,
  // mpirun's binding), as the pinning before it did.
  hwloc_bitmap_t allowed = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(t));
  if (out->this_system_) {
    hwloc_bitmap_t mine = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(t, mine, HWLOC_CPUBIND_THREAD) == 0 && hwloc_bitmap_intersects(mine, allowed))
      hwloc_bitmap_and(allowed, allowed, mine);
    hwloc_bitmap_free(mine);
  }
  const auto cores = pus_by_core(t, allowed);
  hwloc_bitmap_free(allowed);
  out->cores_ = static_cast<int>(cores.size());
  out->numa_nodes_ = std::max(hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE), 1);
  for (size_t k = 0;; ++k) {
    const size_t before = out->slots_.size();
    for (size_t c = 0; c < cores.size(); ++c)
      if (k < cores[c].size())
        out->slots_.push_back(
            CpuSlot{static_cast<int>(cores[c][k]->os_index), core_of(t, cores[c][k]), node_of(t, cores[c][k])});
    if (out->slots_.size() == before) break;
  }
  return out;
}

}  // namespace ptrain
