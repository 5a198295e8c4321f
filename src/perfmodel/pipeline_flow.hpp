#pragma once
// One step of a pipeline, pass by pass and message by message, as its stages
// run them (sync/pipeline_strategy.cpp): each stage takes its passes in the
// schedule's order (core/pipeline_schedule.hpp), receiving a forward's
// activations from the stage before it and a backward's gradient from the
// stage after, and sending what its pass made on; where a send is followed
// by a receive from the same neighbour, both go as one exchange. A message
// takes a hop, its latency and transfer. Sent blocking (MPI's rendezvous, as
// large messages go), it starts once the receiver has asked for it and
// holds both ends until it is through; sent eagerly (threads, small
// messages), the sender goes on after the transfer and the message waits
// for the receiver. Stages that differ in cost, and the idle time the
// schedule leaves each, come out of the flow itself rather than the
// (S - 1) / (M + S - 1) of equal stages and free messages.
//
// Ranks that share cores (cores_per_rank below 1, as the shaped hosts of one
// machine do) compute slower while more of them are busy: the passes are
// stretched by the busy ranks over the cores, the flow run again until the
// stretch settles.
#include <cstddef>
#include <vector>

#include "core/pipeline_schedule.hpp"

namespace ptrain {

struct PipelineFlowConfig {
  PipelineSchedule schedule = PipelineSchedule::OneForwardOneBackward;
  size_t microbatches = 1;
  // Per stage: one micro-batch's forward and backward pass on a core of its own.
  std::vector<double> forward_s, backward_s;
  double hop_s = 0;       // a message's latency and transfer
  double transfer_s = 0;  // an eager sender's share of that: busy until its bytes are out
  bool blocking = true;   // sends wait for the receiver (rendezvous)
  // Every worker's ranks (all pipelines) over the cores they share; >= 1 is a core each.
  double cores_per_rank = 1;
};

struct PipelineFlow {
  double step_s = 0;              // from the first pass's start to the last one's end
  std::vector<double> compute_s;  // per stage, its passes (stretched)
  std::vector<double> idle_s;     // per stage, the step less its passes
  double stretch = 1;             // how much slower a pass ran for the ranks sharing cores
};

// Throws ptrain::Error for stages without costs or costs that are not >= 0.
PipelineFlow simulate_pipeline_flow(const PipelineFlowConfig& config);

}  // namespace ptrain
