#pragma once
// Some of a communicator's workers as a communicator of their own: the
// stages that hold the same layers in several pipelines all-reduce their
// gradients among themselves (sync/pipeline_strategy.hpp). Its collectives
// are ptrain's algorithms over the parent's point-to-point (native is the
// ring), with tags of their own, so that they never take a message of the
// parent's collectives or of another subgroup's.
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace ptrain {

class SubgroupCommunicator final : public Communicator {
 public:
  // `members`: the parent's ranks that form the subgroup, in its rank order;
  // the parent's own rank is one of them. Not collective: every member builds
  // its own with the same members.
  SubgroupCommunicator(Communicator& parent, std::vector<int> members);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  std::string backend() const override { return parent_.backend(); }
  void allreduce(std::span<float> data, AllreduceAlgorithm algorithm = AllreduceAlgorithm::Native) override;
  void broadcast(std::span<std::byte> data, int root) override;
  void barrier() override;
  void send(int peer, int tag, std::span<const std::byte> data) override;
  void recv(int peer, int tag, std::span<std::byte> data) override;
  void sendrecv(int to, int send_tag, std::span<const std::byte> out, int from, int recv_tag,
                std::span<std::byte> in) override;
  void interrupt(const std::string& reason) override { parent_.interrupt(reason); }

 private:
  int parent_rank(int peer) const;

  Communicator& parent_;
  std::vector<int> members_;
  int rank_ = -1;
};

}  // namespace ptrain
