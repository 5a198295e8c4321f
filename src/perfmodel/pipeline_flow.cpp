#include "perfmodel/pipeline_flow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/error.hpp"

namespace ptrain {

namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

// A message between neighbours: micro-batch `micro`'s activations (forward)
// or their gradient, leaving stage `from`.
struct Message {
  bool forward = true;
  size_t micro = 0;
  size_t from = 0;
  auto operator<=>(const Message&) const = default;
};

// One thing a stage does: a pass, or a send and/or a receive (both: one exchange).
struct Op {
  double compute_s = 0;
  std::optional<Message> send, receive;
};

// What stage `s`'s links do around its passes, as PipelineStageWorker does it.
std::vector<Op> stage_ops(const PipelineFlowConfig& c, size_t s, double stretch) {
  const size_t stages = c.forward_s.size();
  const std::vector<PipelinePass> passes = pipeline_passes(c.schedule, s, stages, c.microbatches);
  const bool first = s == 0, last = s + 1 == stages;
  std::vector<Op> ops;
  bool received = false;  // the next pass's input came with the last exchange
  for (size_t i = 0; i < passes.size(); ++i) {
    const PipelinePass& p = passes[i];
    const PipelinePass* next = i + 1 < passes.size() ? &passes[i + 1] : nullptr;
    const bool needs_input = p.forward ? !first : !last;
    if (needs_input && !received) ops.push_back({0, std::nullopt, Message{p.forward, p.micro, p.forward ? s - 1 : s + 1}});
    received = false;
    ops.push_back({(p.forward ? c.forward_s[s] : c.backward_s[s]) * stretch, std::nullopt, std::nullopt});
    if (p.forward ? last : first) continue;  // nothing goes on
    Op out{0, Message{p.forward, p.micro, s}, std::nullopt};
    // A forward followed by a backward waits for that backward's gradient from
    // the same neighbour, and a backward followed by a forward for its activations.
    if (next && next->forward != p.forward) {
      out.receive = Message{next->forward, next->micro, next->forward ? s - 1 : s + 1};
      received = true;
    }
    ops.push_back(out);
  }
  return ops;
}

struct StageState {
  std::vector<Op> ops;
  size_t at = 0;        // the op it is in
  double since = 0;     // when it began that op
  double sent = kUnknown, received = kUnknown;  // when the op's parts were through
  double compute = 0;
};

bool part_done(const std::optional<Message>& part, double when) { return !part || !std::isnan(when); }

// The flow with every pass `stretch` times its cost.
PipelineFlow run_flow(const PipelineFlowConfig& c, double stretch) {
  const size_t stages = c.forward_s.size();
  std::vector<StageState> st(stages);
  for (size_t s = 0; s < stages; ++s) st[s].ops = stage_ops(c, s, stretch);
  std::map<Message, double> arrives;  // eager messages: when each is at its receiver
  auto receiver_of = [](const Message& m) { return m.forward ? m.from + 1 : m.from - 1; };
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t s = 0; s < stages; ++s) {
      StageState& me = st[s];
      if (me.at == me.ops.size()) continue;
      const Op& op = me.ops[me.at];
      if (op.send && std::isnan(me.sent)) {
        if (!c.blocking) {
          me.sent = me.since + c.transfer_s;
          arrives[*op.send] = me.since + c.hop_s;
        } else {  // through once the receiver asks for it
          StageState& peer = st[receiver_of(*op.send)];
          if (peer.at < peer.ops.size() && peer.ops[peer.at].receive == op.send && std::isnan(peer.received)) {
            me.sent = peer.received = std::max(me.since, peer.since) + c.hop_s;
            moved = true;
          }
        }
      }
      if (op.receive && std::isnan(me.received) && !c.blocking)
        if (const auto found = arrives.find(*op.receive); found != arrives.end())
          me.received = std::max(me.since, found->second);
      if (!part_done(op.send, me.sent) || !part_done(op.receive, me.received)) continue;
      double end = me.since + op.compute_s;
      if (op.send) end = std::max(end, me.sent);
      if (op.receive) end = std::max(end, me.received);
      me.compute += op.compute_s;
      me.since = end, me.sent = me.received = kUnknown;
      ++me.at, moved = true;
    }
  }
  PipelineFlow flow;
  flow.stretch = stretch;
  for (const StageState& s : st) {
    if (s.at != s.ops.size()) throw Error("pipeline flow: the stages' messages wait on each other");
    flow.step_s = std::max(flow.step_s, s.since);
  }
  for (const StageState& s : st) {
    flow.compute_s.push_back(s.compute);
    flow.idle_s.push_back(flow.step_s - s.compute);
  }
  return flow;
}

}  // namespace

PipelineFlow simulate_pipeline_flow(const PipelineFlowConfig& c) {
  const size_t stages = c.forward_s.size();
  if (stages == 0 || c.backward_s.size() != stages)
    throw Error(fmt::format("pipeline flow: {} stages' forward costs and {} backward", stages, c.backward_s.size()));
  for (size_t s = 0; s < stages; ++s)
    if (!(c.forward_s[s] >= 0) || !(c.backward_s[s] >= 0) || !std::isfinite(c.forward_s[s] + c.backward_s[s]))
      throw Error(fmt::format("pipeline flow: stage {}'s costs must be >= 0", s));
  if (c.microbatches < 1) throw Error("pipeline flow: at least one micro-batch");
  if (!(c.hop_s >= 0) || !(c.transfer_s >= 0) || !(c.cores_per_rank > 0))
    throw Error("pipeline flow: hop and transfer times must be >= 0, the cores per rank > 0");
  PipelineFlow flow = run_flow(c, 1);
  // The stretch that makes itself: the ranks busy on average, over the cores, at the flow it gives.
  for (int round = 0; round < 50 && c.cores_per_rank < 1 && flow.step_s > 0; ++round) {
    double busy = 0;
    for (const double t : flow.compute_s) busy += t;
    const double active = busy / flow.step_s / static_cast<double>(stages);  // a rank's share of the time
    const double stretch = std::max(1.0, active / c.cores_per_rank);
    if (std::abs(stretch - flow.stretch) < 1e-9 * stretch) break;
    flow = run_flow(c, stretch);
  }
  return flow;
}

}  // namespace ptrain
