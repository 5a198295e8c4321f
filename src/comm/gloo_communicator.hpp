#pragma once
// MPI ranks whose all-reduces move their bytes over Gloo's TCP transport
// (libgloo-dev, the one PyTorch's gloo backend uses) instead of OpenMPI's
// (run.transport gloo). OpenMPI's TCP transport moves bytes only while a rank
// polls it, so a rank's wait keeps a core busy and the link idles whenever it
// does not; Gloo's has an I/O thread of its own and its waits sleep.
//
// What goes where: every rank opens one TCP connection to every other (a full
// mesh, its addresses exchanged over MPI); the native all-reduce (of floats
// and of halves) is Gloo's ring, two segments of up to 1 MiB in flight; ring,
// hd and tree are ptrain's algorithms (comm/allreduce_algorithms.hpp) over
// Gloo's point-to-point messages, and so are the entry check of every
// collective (comm/collective_entry.hpp), barrier and allgatherv (DGC's sparse
// exchange), so that a rank waiting for the others sleeps; only broadcast (a
// run's start) stays on the MPI communicator it was made from. recv_any is not
// supported (the parameter servers stay on MPI).
//
// Errors: a wait that passes the timeout, or a peer whose connection breaks,
// fails naming the peer (point-to-point) or, in Gloo's all-reduce, the ranks
// that no longer answer MPI's roll call; after any failure the communicator
// is unusable. interrupt() takes effect at the next call or at the end of the
// wait under way (Gloo cannot cut a wait short without leaving its
// connections half-used), with the interrupt's reason as the error.
#include <cstdlib>
#include <memory>

#include "comm/communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_transport.hpp"

namespace ptrain {

// Whether this build has Gloo (libgloo-dev found when it was configured).
bool gloo_available();
// What the auto transport takes for all-reduces between ranks (training
// without parameter servers, and bench allreduce): Gloo's when this build has
// it and the ranks span several hosts, MPI's otherwise.
inline bool gloo_by_default() {
  return gloo_available() && rank_placement(std::getenv) == RankPlacement::SeveralHosts;
}

// Collective over `control`'s ranks, in the same order on every rank: each
// makes its connections and learns everyone's addresses through `control`,
// which it keeps for the checks above. Throws ptrain::Error when this build has
// no Gloo, when the interface (comm/gloo_interface.hpp) cannot be used, or
// when a rank does not connect within `timeout` (which every later wait has too).
std::unique_ptr<Communicator> make_gloo_communicator(std::unique_ptr<MpiCommunicator> control,
                                                     std::chrono::milliseconds timeout);

// One line: which interface the gloo transport of this process uses ("" before
// the first make_gloo_communicator), and the chooser's warning ("" if none).
std::string gloo_interface_in_use();
std::string gloo_interface_warning();

}  // namespace ptrain
