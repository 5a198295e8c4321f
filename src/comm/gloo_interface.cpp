#include "comm/gloo_interface.hpp"

#include <fmt/format.h>

#include <string_view>

#include "core/error.hpp"

namespace ptrain {

namespace {

// "eth0" from "eth0,eth1"; empty when the list names none, or names networks
// ("10.0.0.0/24": OpenMPI takes those too, Gloo only names).
std::string first_interface(std::string_view list) {
  const std::string_view first = list.substr(0, list.find(','));
  if (first.empty() || first.find('/') != std::string_view::npos) return {};
  return std::string(first);
}

}  // namespace

GlooInterface choose_gloo_interface(const EnvLookup& env, const std::string& hostname) {
  GlooInterface g;
  if (const char* named = env("GLOO_SOCKET_IFNAME")) {
    const std::string_view value(named);
    if (value.empty()) throw Error("GLOO_SOCKET_IFNAME is set but empty (name one network interface, e.g. eth0)");
    if (value.find(',') != std::string_view::npos)
      throw Error(fmt::format("GLOO_SOCKET_IFNAME '{}': ptrain's gloo transport uses one interface (name one)", value));
    g.iface = value;
    g.description = fmt::format("interface {} (GLOO_SOCKET_IFNAME)", value);
    return g;
  }
  if (const char* include = env("OMPI_MCA_btl_tcp_if_include")) {
    if (auto iface = first_interface(include); !iface.empty()) {
      g.iface = iface;
      g.description = fmt::format("interface {} (OpenMPI's btl_tcp_if_include)", iface);
      return g;
    }
  }
  if (rank_placement(env) == RankPlacement::OneHost) {
    g.iface = "lo";
    g.description = "loopback (every rank on this host)";
    return g;
  }
  g.hostname = hostname;
  g.description = fmt::format("the address of this host's name, {}", hostname);
  g.warning = fmt::format(
      "gloo transport: ranks on several hosts and no interface named; using the address '{}' resolves to (set "
      "GLOO_SOCKET_IFNAME=eth0, or mpirun --mca btl_tcp_if_include eth0, if that is a loopback address)",
      hostname);
  return g;
}

}  // namespace ptrain
