// choose_mpi_transport: ranks on one host are held to shared memory unless
// the user set the transport; ranks on several hosts are left to the user,
// with a warning when no interface is named.
#include "comm/mpi_transport.hpp"

#include <gtest/gtest.h>

#include <map>

namespace ptrain {
namespace {

MpiTransport choose_transport(const std::map<std::string, std::string>& env) {
  return choose_mpi_transport([&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

using Settings = std::vector<std::pair<std::string, std::string>>;

TEST(MpiTransport, RanksOnOneHostUseSharedMemoryOnly) {
  const MpiTransport t = choose_transport({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(t.set, (Settings{{"OMPI_MCA_btl", "self,vader"}, {"OMPI_MCA_pml", "ob1"}}));
  EXPECT_EQ(t.description, "one host: shared memory only (ptrain set btl=self,vader and pml=ob1; no rank listens)");
  EXPECT_EQ(t.warning, "");
}

TEST(MpiTransport, TheUsersSettingsWin) {
  for (const char* name : {"OMPI_MCA_btl", "OMPI_MCA_pml", "OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_btl_tcp_if_exclude"}) {
    const MpiTransport t =
        choose_transport({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}, {name, "lo"}});
    EXPECT_TRUE(t.set.empty()) << name;
    EXPECT_EQ(t.description, "one host: the MPI transport you set (" + std::string(name).substr(9) + "=lo)");
    // An interface named without btl leaves the TCP transport listening on every address: said.
    const bool interface_only = std::string(name).starts_with("OMPI_MCA_btl_tcp_if_");
    EXPECT_EQ(t.warning.starts_with(std::string(name).substr(9) + "=lo does not keep MPI's TCP transport off"),
              interface_only)
        << name << ": " << t.warning;
  }
  const MpiTransport both = choose_transport({{"OMPI_COMM_WORLD_SIZE", "2"},
                                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                    {"OMPI_MCA_btl", "tcp,self"},
                                    {"OMPI_MCA_btl_tcp_if_include", "lo"}});
  EXPECT_EQ(both.description, "one host: the MPI transport you set (btl=tcp,self, btl_tcp_if_include=lo)");
}

TEST(MpiTransport, RanksOnSeveralHostsAreLeftToTheUserWithAWarningWhenNoInterfaceIsNamed) {
  const MpiTransport open = choose_transport({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}});
  EXPECT_TRUE(open.set.empty());
  EXPECT_EQ(open.description, "several hosts: TCP over every interface (no btl_tcp_if_include given)");
  EXPECT_NE(open.warning.find("mpirun --mca btl_tcp_if_include IF --mca oob_tcp_if_include IF"), std::string::npos)
      << open.warning;
  const MpiTransport named = choose_transport({{"OMPI_COMM_WORLD_SIZE", "4"},
                                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                     {"OMPI_MCA_btl", "tcp,self"},
                                     {"OMPI_MCA_btl_tcp_if_include", "eth1"}});
  EXPECT_TRUE(named.set.empty());
  EXPECT_EQ(named.description, "several hosts: the MPI transport you set (btl=tcp,self, btl_tcp_if_include=eth1)");
  EXPECT_EQ(named.warning, "");
  // A fabric without TCP: no interface to name.
  for (const char* btl : {"self,vader,openib", "^tcp", "^vader,tcp"}) {
    const MpiTransport fabric =
        choose_transport({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}, {"OMPI_MCA_btl", btl}});
    EXPECT_EQ(fabric.warning, "") << btl;
  }
  const MpiTransport with_tcp =
      choose_transport({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}, {"OMPI_MCA_btl", "^openib"}});
  EXPECT_NE(with_tcp.warning, "");
}

TEST(MpiTransport, AnotherLauncherIsLeftAlone) {
  for (const auto& env : std::vector<std::map<std::string, std::string>>{
           {{"PMI_RANK", "0"}},
           {{"OMPI_COMM_WORLD_SIZE", "2"}},
           {{"OMPI_COMM_WORLD_SIZE", "two"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}}) {
    const MpiTransport t = choose_transport(env);
    EXPECT_TRUE(t.set.empty());
    EXPECT_EQ(t.description, "started without OpenMPI's mpirun: the MPI library chooses its transport");
  }
}

}  // namespace
}  // namespace ptrain
