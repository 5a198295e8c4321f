#pragma once
// Tags of the point-to-point messages each collective algorithm sends, and
// their names for error messages.
#include <string>

namespace ptrain {

enum MessageTag : int {
  kTagRingAllreduce = 1,
  kTagHalvingDoubling = 2,
  kTagTree = 3,
  kTagAllgather = 4,
  kTagCollectiveEntry = 5,  // the tokens of the entry check (MPI backend)
};

inline std::string tag_name(int tag) {
  switch (tag) {
    case kTagRingAllreduce:
      return "ring allreduce";
    case kTagHalvingDoubling:
      return "hd allreduce";
    case kTagTree:
      return "tree allreduce";
    case kTagAllgather:
      return "allgatherv";
    case kTagCollectiveEntry:
      return "collective entry";
  }
  return "message with tag " + std::to_string(tag);
}

}  // namespace ptrain
