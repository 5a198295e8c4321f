#pragma once
// Which network an MPI rank may use, decided from its environment before
// MPI_Init. OpenMPI 4.1's TCP transport (btl tcp) listens on every address of
// the host (0.0.0.0 and ::), whatever btl_tcp_if_include names: that only
// chooses the addresses it tells its peers and connects over (measured on
// Debian's 4.1.4). So the ranks of a job that all run on one host are kept off
// it: shared memory (vader) and self only, under the ob1 messaging layer (the
// UCX one may open TCP listeners of its own). Then a rank listens nowhere.
//
// The user's settings win: any of btl, pml, btl_tcp_if_include or
// btl_tcp_if_exclude in the environment (OMPI_MCA_<name>, where mpirun --mca
// and -x put them) leaves the transport to them. Settings in an MCA parameter
// file do not count: the environment overrides them in OpenMPI, and Debian's
// own /etc/openmpi/openmpi-mca-params.conf sets btl and pml.
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ptrain {

struct MpiTransport {
  // The environment variables to set before MPI_Init (none: leave it to MPI).
  std::vector<std::pair<std::string, std::string>> set;
  // One line: what the ranks use, and who chose it.
  std::string description;
  // A line the user should read (ranks on several hosts with no interface named), or empty.
  std::string warning;
};

// A variable's value, or null when unset (std::getenv's contract).
using EnvLookup = std::function<const char*(const char*)>;

// Where mpirun placed the ranks, from OpenMPI's launch variables
// (OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_LOCAL_SIZE, equal exactly when
// this host has all of them), so every rank reads the same answer; Unknown
// when OpenMPI's mpirun did not start the process.
enum class RankPlacement { Unknown, OneHost, SeveralHosts };
RankPlacement rank_placement(const EnvLookup& env);

// Decides from OpenMPI's launch variables (OMPI_COMM_WORLD_SIZE and
// OMPI_COMM_WORLD_LOCAL_SIZE: all ranks on this host when equal) and the
// user's MCA settings. Sets nothing itself.
MpiTransport choose_mpi_transport(const EnvLookup& env);

// choose_mpi_transport on this process's environment, applied with setenv
// and remembered for mpi_transport_in_use(). Call before MPI_Init.
const MpiTransport& apply_mpi_transport();

// What apply_mpi_transport chose in this process, or null before it ran.
const MpiTransport* mpi_transport_in_use();

}  // namespace ptrain
