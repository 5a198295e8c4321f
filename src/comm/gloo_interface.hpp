#pragma once
// Which network interface Gloo's TCP transport (run.transport gloo) binds and
// tells its peers, decided from the environment, in this order:
//   1. GLOO_SOCKET_IFNAME, as PyTorch's gloo backend reads it: one interface;
//   2. the first interface OpenMPI's TCP transport was told to use
//      (OMPI_MCA_btl_tcp_if_include, where mpirun --mca puts it), so that
//      both transports share the network the user chose for the job;
//   3. loopback, when mpirun started every rank on this host;
//   4. otherwise the address this host's name resolves to (Gloo's own
//      default), which on many machines is 127.0.1.1: hence the warning.
#include <string>

#include "comm/mpi_transport.hpp"

namespace ptrain {

struct GlooInterface {
  std::string iface;     // an interface name, or empty: resolve `hostname`
  std::string hostname;  // used when iface is empty
  std::string description;  // one line: which interface or name, and who chose it
  std::string warning;      // a line the user should read, or empty
};

// Throws ptrain::Error naming the variable when GLOO_SOCKET_IFNAME is set
// but empty or names more than one interface (ptrain opens one device).
// `hostname` is this host's name (gethostname), used only in case 4.
GlooInterface choose_gloo_interface(const EnvLookup& env, const std::string& hostname);

}  // namespace ptrain
