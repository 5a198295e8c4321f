#include "comm/mpi_transport.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace ptrain {

namespace {

// The MCA parameters that decide where a rank's messages go.
constexpr const char* kTransportParameters[] = {"btl", "pml", "btl_tcp_if_include", "btl_tcp_if_exclude"};

std::optional<long> number(const char* text) {
  if (!text) return std::nullopt;
  const std::string_view s(text);
  long value = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc() || end != s.data() + s.size() || value < 1) return std::nullopt;
  return value;
}

// False when a btl list leaves the TCP transport out: "self,vader", "^tcp".
bool uses_tcp(const std::string& btl) {
  if (btl.empty()) return true;
  const bool negated = btl.front() == '^';
  bool named = false;
  std::string_view rest = std::string_view(btl).substr(negated ? 1 : 0);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    if (rest.substr(0, comma) == "tcp") named = true;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return negated ? !named : named;
}

MpiTransport chosen;
bool applied = false;

}  // namespace

RankPlacement rank_placement(const EnvLookup& env) {
  const auto world = number(env("OMPI_COMM_WORLD_SIZE"));
  const auto local = number(env("OMPI_COMM_WORLD_LOCAL_SIZE"));
  if (!world || !local) return RankPlacement::Unknown;
  return *world == *local ? RankPlacement::OneHost : RankPlacement::SeveralHosts;
}

MpiTransport choose_mpi_transport(const EnvLookup& env) {
  MpiTransport t;
  const RankPlacement placement = rank_placement(env);
  if (placement == RankPlacement::Unknown) {
    t.description = "started without OpenMPI's mpirun: the MPI library chooses its transport";
    return t;
  }
  std::string users;  // "btl=tcp,self, btl_tcp_if_include=eth0"
  std::string btl, interfaces;
  for (const char* name : kTransportParameters) {
    const char* value = env(fmt::format("OMPI_MCA_{}", name).c_str());
    if (!value) continue;
    users += fmt::format("{}{}={}", users.empty() ? "" : ", ", name, value);
    if (std::string_view(name) == "btl") btl = value;
    if (std::string_view(name).starts_with("btl_tcp_if_")) interfaces = fmt::format("{}={}", name, value);
  }
  const bool one_host = placement == RankPlacement::OneHost;
  const std::string where = one_host ? "one host" : "several hosts";
  if (!users.empty()) {
    t.description = fmt::format("{}: the MPI transport you set ({})", where, users);
  } else if (one_host) {
    t.set = {{"OMPI_MCA_btl", "self,vader"}, {"OMPI_MCA_pml", "ob1"}};
    t.description = "one host: shared memory only (ptrain set btl=self,vader and pml=ob1; no rank listens)";
  } else {
    t.description = "several hosts: TCP over every interface (no btl_tcp_if_include given)";
  }
  if (one_host && !interfaces.empty() && btl.empty())
    t.warning = fmt::format(
        "{} does not keep MPI's TCP transport off the network (it listens on every address whatever the "
        "interfaces named); on one host give mpirun --mca btl self,vader, or set none of btl, pml and "
        "btl_tcp_if_* and ptrain does (docs/security.md)",
        interfaces);
  if (!one_host && interfaces.empty() && uses_tcp(btl))
    t.warning =
        "ranks on several hosts and no interface named: MPI's TCP transport may carry the job over any "
        "interface; name the cluster's with mpirun --mca btl_tcp_if_include IF --mca oob_tcp_if_include IF "
        "(docs/security.md)";
  return t;
}

const MpiTransport& apply_mpi_transport() {
  chosen = choose_mpi_transport([](const char* name) { return std::getenv(name); });
  for (const auto& [name, value] : chosen.set) ::setenv(name.c_str(), value.c_str(), 1);
  applied = true;
  return chosen;
}

const MpiTransport* mpi_transport_in_use() { return applied ? &chosen : nullptr; }

}  // namespace ptrain
