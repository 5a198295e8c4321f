#include "comm/subgroup_communicator.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "comm/allreduce_algorithms.hpp"
#include "comm/message_tags.hpp"
#include "core/error.hpp"

namespace ptrain {

SubgroupCommunicator::SubgroupCommunicator(Communicator& parent, std::vector<int> members)
    : parent_(parent), members_(std::move(members)) {
  const auto mine = std::find(members_.begin(), members_.end(), parent.rank());
  if (mine == members_.end())
    throw Error(fmt::format("subgroup {}: worker {} is not one of its members", fmt::join(members_, ","),
                            parent.rank()));
  rank_ = static_cast<int>(mine - members_.begin());
}

int SubgroupCommunicator::parent_rank(int peer) const {
  if (peer < 0 || peer >= size())
    throw Error(fmt::format("subgroup of {} workers: no worker {}", size(), peer));
  return members_[static_cast<size_t>(peer)];
}

void SubgroupCommunicator::allreduce(std::span<float> data, AllreduceAlgorithm algorithm) {
  stats_.collectives++;
  const bool own = algorithm == AllreduceAlgorithm::Native || algorithm == AllreduceAlgorithm::Hierarchical;
  run_allreduce_algorithm(*this, data, own ? AllreduceAlgorithm::Ring : algorithm);
}

void SubgroupCommunicator::broadcast(std::span<std::byte> data, int root) {
  stats_.collectives++;
  if (rank_ != root) return recv(root, kTagBroadcast, data);
  for (int r = 0; r < size(); ++r)
    if (r != root) send(r, kTagBroadcast, data);
}

void SubgroupCommunicator::barrier() {
  float token = 0;
  allreduce(std::span<float>(&token, 1), AllreduceAlgorithm::Tree);
}

void SubgroupCommunicator::send(int peer, int tag, std::span<const std::byte> data) {
  parent_.send(parent_rank(peer), tag + kTagSubgroup, data);
}

void SubgroupCommunicator::recv(int peer, int tag, std::span<std::byte> data) {
  parent_.recv(parent_rank(peer), tag + kTagSubgroup, data);
}

void SubgroupCommunicator::sendrecv(int to, int send_tag, std::span<const std::byte> out, int from, int recv_tag,
                                    std::span<std::byte> in) {
  parent_.sendrecv(parent_rank(to), send_tag + kTagSubgroup, out, parent_rank(from), recv_tag + kTagSubgroup, in);
}

}  // namespace ptrain
