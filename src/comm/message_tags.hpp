#pragma once
// Tags of the point-to-point messages each collective algorithm and the
// parameter server send, and their names for error messages.
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
  kTagHierarchicalEntry = 10,  // the tokens of the entry check between ranks (hierarchical backend)
  kTagPsRequest = 20,  // worker to parameter-server shard (ps/ps_protocol.hpp)
  kTagPsReply = 21,    // shard to worker
  kTagClockSync = 22,  // the timeline's clock readings between rank 0 and the others (run/timeline_file.hpp)
  kTagPipelineShape = 23,        // a stage boundary's per-sample shape, once (sync/pipeline_links.hpp)
  kTagPipelineActivations = 24,  // a micro-batch's activations, to the next stage
  kTagPipelineGradients = 25,    // their gradient, back to the stage before
  kTagPipelineLoss = 26,         // the step's loss, from the last stage to the others
  kTagPipelineModel = 27,        // a stage's parameters, to worker 0 (sync/pipeline_strategy.hpp)
  kTagBroadcast = 28,            // a broadcast written over point-to-point (comm/subgroup_communicator.hpp)
  kTagPipelineEvaluation = 29,   // the test set's sums, from the last stage to worker 0
};

// Every tag above is below this. The hierarchical backend sends a message
// from thread a of one rank to thread b of another with tag + kTagSpan x
// (a x T + b) (comm/hierarchical_communicator.hpp), which names as its tag.
inline constexpr int kTagSpan = 32;
// A subgroup's messages (comm/subgroup_communicator.hpp) carry tag +
// kTagSubgroup, which names as its tag: they never meet the parent's own.
inline constexpr int kTagSubgroup = 2 * kTagSpan;

inline std::string tag_name(int tag) {
  if (tag >= kTagSpan) return tag_name(tag % kTagSpan);
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
    case kTagHierarchicalEntry:
      return "collective entry";
    case kTagRingAllreduceHalf:
      return "fp16 ring allreduce";
    case kTagHalvingDoublingHalf:
      return "fp16 hd allreduce";
    case kTagTreeHalf:
      return "fp16 tree allreduce";
    case kTagPsRequest:
      return "parameter-server request";
    case kTagPsReply:
      return "parameter-server reply";
    case kTagClockSync:
      return "timeline clock reading";
    case kTagPipelineShape:
      return "pipeline activation shape";
    case kTagPipelineActivations:
      return "pipeline activations";
    case kTagPipelineGradients:
      return "pipeline activation gradients";
    case kTagPipelineLoss:
      return "pipeline loss";
    case kTagPipelineModel:
      return "pipeline stage parameters";
    case kTagBroadcast:
      return "broadcast";
    case kTagPipelineEvaluation:
      return "pipeline evaluation sums";
  }
  return "message with tag " + std::to_string(tag);
}

}  // namespace ptrain
