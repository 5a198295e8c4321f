// A build without libgloo-dev: the gloo transport says what it needs.
#include "comm/gloo_communicator.hpp"

#include "core/error.hpp"

namespace ptrain {

bool gloo_available() { return false; }

std::unique_ptr<Communicator> make_gloo_communicator(std::unique_ptr<MpiCommunicator>, std::chrono::milliseconds) {
  throw Error("run.transport gloo: this ptrain was built without Gloo (install libgloo-dev and build it again)");
}

std::string gloo_interface_in_use() { return {}; }
std::string gloo_interface_warning() { return {}; }

}  // namespace ptrain
