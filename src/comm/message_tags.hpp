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
  kTagRingAllreduceHalf = 6,
  kTagHalvingDoublingHalf = 7,
  kTagTreeHalf = 8,
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
    case kTagRingAllreduceHalf:
      return "fp16 ring allreduce";
    case kTagHalvingDoublingHalf:
      return "fp16 hd allreduce";
    case kTagTreeHalf:
      return "fp16 tree allreduce";
  }
  return "message with tag " + std::to_string(tag);
}

}  // namespace ptrain
