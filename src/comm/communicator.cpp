#include "comm/communicator.hpp"

#include "comm/allreduce_algorithms.hpp"
#include "comm/message_tags.hpp"
#include "core/error.hpp"

namespace ptrain {

AllreduceAlgorithm parse_allreduce_algorithm(const std::string& name) {
  if (name == "native") return AllreduceAlgorithm::Native;
  if (name == "ring") return AllreduceAlgorithm::Ring;
  if (name == "hd") return AllreduceAlgorithm::HalvingDoubling;
  if (name == "tree") return AllreduceAlgorithm::Tree;
  if (name == "hierarchical") return AllreduceAlgorithm::Hierarchical;
  throw Error("strategy.allreduce: unknown algorithm '" + name + "' (choose native, ring, hd, tree or hierarchical)");
}

void Communicator::allreduce_half(std::span<uint16_t> data, AllreduceAlgorithm algorithm) {
  stats_.collectives++;
  run_allreduce_half_algorithm(
      *this, data, algorithm == AllreduceAlgorithm::Native ? AllreduceAlgorithm::Ring : algorithm);
}

std::optional<AnyMessage> Communicator::recv_any(int, std::chrono::milliseconds) {
  throw Error("recv_any: not supported by " + backend());
}

std::vector<std::vector<std::byte>> Communicator::allgatherv(std::span<const std::byte> mine) {
  const int n = size(), r = rank();
  stats_.collectives++;
  std::vector<std::vector<std::byte>> all(static_cast<size_t>(n));
  all[static_cast<size_t>(r)].assign(mine.begin(), mine.end());
  // Pairwise exchange: in round k, send to r+k and receive from r-k; each round
  // first agrees on the size, then moves the bytes.
  for (int k = 1; k < n; ++k) {
    const int to = (r + k) % n, from = (r + n - k) % n;
    const uint64_t out_size = mine.size();
    uint64_t in_size = 0;
    sendrecv(to, std::as_bytes(std::span<const uint64_t>(&out_size, 1)), from,
             std::as_writable_bytes(std::span<uint64_t>(&in_size, 1)), kTagAllgather);
    auto& in = all[static_cast<size_t>(from)];
    in.resize(in_size);
    sendrecv(to, mine, from, in, kTagAllgather);
  }
  return all;
}

void Communicator::count_allreduce_traffic(size_t bytes) {
  const auto n = static_cast<uint64_t>(size());
  const uint64_t moved = 2 * bytes * (n - 1) / n;
  stats_.bytes_sent += moved;
  stats_.bytes_received += moved;
}

std::string to_string(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::Native:
      return "native";
    case AllreduceAlgorithm::Ring:
      return "ring";
    case AllreduceAlgorithm::HalvingDoubling:
      return "hd";
    case AllreduceAlgorithm::Tree:
      return "tree";
    case AllreduceAlgorithm::Hierarchical:
      return "hierarchical";
  }
  return "?";
}

}  // namespace ptrain
