#include "comm/communicator.hpp"

#include "core/error.hpp"

namespace ptrain {

AllreduceAlgorithm parse_allreduce_algorithm(const std::string& name) {
  if (name == "native") return AllreduceAlgorithm::Native;
  if (name == "ring") return AllreduceAlgorithm::Ring;
  if (name == "hd") return AllreduceAlgorithm::HalvingDoubling;
  if (name == "tree") return AllreduceAlgorithm::Tree;
  throw Error("--allreduce: unknown algorithm '" + name + "' (choose native, ring, hd or tree)");
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
  }
  return "?";
}

}  // namespace ptrain
