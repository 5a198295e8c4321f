// choose_gloo_interface: the interface the user named for Gloo, else the one
// named for OpenMPI's TCP transport, else loopback on one host, else the
// host's name with a warning.
#include "comm/gloo_interface.hpp"

#include <gtest/gtest.h>

#include <map>

#include "core/error.hpp"

namespace ptrain {
namespace {

GlooInterface choose_interface(const std::map<std::string, std::string>& env) {
  return choose_gloo_interface(
      [&](const char* name) -> const char* {
        const auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      "node7");
}

TEST(GlooInterface, GlooSocketIfnameWins) {
  const GlooInterface g = choose_interface({{"GLOO_SOCKET_IFNAME", "eth1"},
                                  {"OMPI_MCA_btl_tcp_if_include", "eth0"},
                                  {"OMPI_COMM_WORLD_SIZE", "2"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(g.iface, "eth1");
  EXPECT_EQ(g.description, "interface eth1 (GLOO_SOCKET_IFNAME)");
  EXPECT_EQ(g.warning, "");
}

TEST(GlooInterface, OpenMpisInterfaceIsSharedWhenGlooHasNone) {
  const GlooInterface g = choose_interface({{"OMPI_MCA_btl_tcp_if_include", "ib0,eth0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}});
  EXPECT_EQ(g.iface, "ib0");
  EXPECT_EQ(g.description, "interface ib0 (OpenMPI's btl_tcp_if_include)");
  // A network, not a name: Gloo cannot bind it, so the next rule decides.
  const GlooInterface n = choose_interface({{"OMPI_MCA_btl_tcp_if_include", "10.0.0.0/24"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(n.iface, "lo");
}

TEST(GlooInterface, RanksOnOneHostUseLoopback) {
  const GlooInterface g = choose_interface({{"OMPI_COMM_WORLD_SIZE", "3"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}});
  EXPECT_EQ(g.iface, "lo");
  EXPECT_EQ(g.description, "loopback (every rank on this host)");
  EXPECT_EQ(g.warning, "");
}

TEST(GlooInterface, SeveralHostsAndNoNameFallBackToTheHostNameWithAWarning) {
  const GlooInterface g = choose_interface({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(g.iface, "");
  EXPECT_EQ(g.hostname, "node7");
  EXPECT_NE(g.warning.find("set GLOO_SOCKET_IFNAME=eth0"), std::string::npos) << g.warning;
}

TEST(GlooInterface, AnEmptyOrListedGlooSocketIfnameIsRefused) {
  try {
    choose_interface({{"GLOO_SOCKET_IFNAME", ""}});
    FAIL() << "accepted an empty GLOO_SOCKET_IFNAME";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "GLOO_SOCKET_IFNAME is set but empty (name one network interface, e.g. eth0)");
  }
  try {
    choose_interface({{"GLOO_SOCKET_IFNAME", "eth0,eth1"}});
    FAIL() << "accepted two interfaces";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "GLOO_SOCKET_IFNAME 'eth0,eth1': ptrain's gloo transport uses one interface (name one)");
  }
}

}  // namespace
}  // namespace ptrain
