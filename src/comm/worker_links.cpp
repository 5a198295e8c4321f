#include "comm/worker_links.hpp"

#include "comm/gloo_communicator.hpp"

namespace ptrain {

WorkerLinks make_worker_links(int local_workers, bool over_gloo, std::chrono::milliseconds timeout) {
  auto over_ranks = [&]() -> std::unique_ptr<Communicator> {
    auto mpi = std::make_unique<MpiCommunicator>(timeout);
    if (!over_gloo) return mpi;
    return make_gloo_communicator(std::move(mpi), timeout);
  };
  WorkerLinks links;
  for (int t = 0; t < local_workers && local_workers > 1; ++t) {
    links.across.push_back(over_ranks());
    links.mesh.push_back(t == 0 ? std::make_unique<MpiCommunicator>(timeout) : links.mesh.front()->share());
  }
  if (over_gloo && local_workers == 1) links.gloo_ranks = over_ranks();
  return links;
}

}  // namespace ptrain
