#pragma once
// The messages between workers and parameter-server shards, in ps-lite's three
// verbs (push, pull, wait) plus the few a coordinated schedule needs. Every
// request goes to a shard with kTagPsRequest; every answer comes back with
// kTagPsReply (comm/message_tags.hpp). A message is a fixed header followed
// by a payload; the headers have no padding, so that no message carries
// bytes nobody set.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "comm/message_tags.hpp"

namespace ptrain {

enum class PsRequestKind : uint32_t {
  Begin = 1,   // to shard 0: may this worker take another step in this epoch?
  Pull = 2,    // this shard's parameters (or their change), once it holds `version` updates and `received` pushes
  Claim = 3,   // to shard 0 (ps-backup): is my gradient for `version` among the first W - b?
  Push = 4,    // a gradient slice for `version` (payload: the codec's bytes, or raw floats)
  Leave = 5,   // the worker failed and leaves the run; `received` = 1 if it held an unpushed ticket
  Finish = 6,  // from worker 0 after the run: send your statistics and stop serving
  Init = 7,    // from worker 0 before the first step: the shard's initial parameters
  Save = 8,    // from worker 0 between steps: the shard's whole state, once it holds `version` and `received`
  Restore = 9, // from worker 0 before the first step, instead of Init: a state that Save answered
  Stop = 10,    // the worker diverged: end the run where every worker can agree; `received` as for Leave
};

struct PsRequest {
  PsRequestKind kind = PsRequestKind::Pull;
  uint32_t worker = 0;
  uint64_t version = 0;
  uint64_t received = 0;
  double epoch = 0;  // Push: epochs the worker had done, for the rate the shard applies (optim/lr_schedule.hpp)
  uint32_t exact = 0;  // Pull: 1 = the dense parameters, whatever the pull codec (evaluation, the run's end)
  uint32_t unused = 0;  // no padding: every byte of a message is set
};

// The answer to Begin and Claim.
struct PsDecision {
  uint32_t go = 0;         // Begin: 1 = take a step, 0 = the epoch is over; Claim: 1 = accepted
  uint32_t over = 0;       // Begin with go = 0: the run is over (--time-limit)
  uint64_t version = 0;    // Begin: the version to pull at least
  uint64_t received = 0;   // Begin with go = 0: pushes every shard will have received by the epoch's end
  uint64_t batches = 1;    // Begin with go = 1: the base batches this step takes (stale policy batch:K)
};

// How the payload of a pull's answer is to be read.
enum class PullEncoding : uint32_t { Dense = 0, Coded = 1 };

// The answer to Pull; followed by the shard's parameters as floats, or by the
// pull codec's encoding of their change since the worker's last pull
// (ps/pull_encoder.hpp).
struct PsParamsHeader {
  uint64_t version = 0;
  uint32_t encoding = 0;  // PullEncoding: 0 dense floats, 1 coded change
  uint32_t unused = 0;    // no padding: every byte of a message is set
};

static_assert(sizeof(PsRequest) == 40 && sizeof(PsDecision) == 32 && sizeof(PsParamsHeader) == 16,
              "a header with padding would send bytes nobody set");

// A header and its payload, as one message.
template <typename Header>
std::vector<std::byte> ps_message(const Header& header, std::span<const std::byte> payload = {});

// The header of a message, and what follows it. Throws ptrain::Error when the
// message is shorter than a header (`what` names the message).
template <typename Header>
Header ps_header(std::span<const std::byte> message, const char* what);
std::span<const std::byte> ps_payload(std::span<const std::byte> message, size_t header_bytes);

}  // namespace ptrain
