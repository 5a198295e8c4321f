#pragma once
// Whether a run goes on: what a worker says of itself after a step and at an
// epoch's end, and what the workers decide from all of it together.
#include <cstdint>
#include <string>

#include "comm/communicator.hpp"

namespace ptrain {

// Why this worker's step diverged ("": it did not): a non-finite loss, or a
// gradient beyond fp16's range (the codec saturated it since `saturated_before`,
// which is then brought up to `saturated_now`). `step` is 1-based.
std::string step_divergence(int rank, float loss, size_t step, uint64_t saturated_now,
                            uint64_t& saturated_before);

// What a worker says at an epoch's end.
struct WorkerStatus {
  enum class Kind : uint8_t {
    Training,         // it trains on
    TestDiverged,     // worker 0: the test loss is not finite
    Left,             // it failed and left the run (async)
    DivergedAndLeft,  // it diverged and left, the others went on (async)
    Diverged,         // it diverged: the run must stop
  };
  Kind kind = Kind::Training;
  std::string why;
};

// Every worker's status, heard by every worker: the reason the run stops
// after this epoch ("": it goes on). It stops when a worker diverged, when
// every worker left and one of them diverged, or else when the test loss
// diverged. Throws InterruptedError when every worker failed and left.
std::string run_stop_verdict(Communicator& comm, const WorkerStatus& mine);

}  // namespace ptrain
