#pragma once
// The one parameter vector all threads train, and the rule that guards it.
// A thread reads it into its own replica, computes a gradient there without
// any synchronization, and applies an optimizer step (optim/: SGD, momentum,
// Nesterov or Adam, the same kernels as every other strategy) through
// apply(). The algorithms differ only in these two calls,
// and in where the optimizer's state lives: under the lock with the
// parameters (mutex, rwlock, seq), in each published version (Leashed-SGD),
// or with each thread (HOGWILD!, as each process of PyTorch's HOGWILD!
// example has its own optimizer).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/state_stream.hpp"
#include "shm/backoff.hpp"
#include "shm/shm_config.hpp"

namespace ptrain {

// What one thread counts; the runner adds them up at the end.
struct ThreadCounters {
  uint64_t applied = 0;          // gradients applied
  uint64_t dropped = 0;          // leashed: gradients given up after --persistence failed swaps
  uint64_t failed_swaps = 0;     // leashed: compare-and-swaps that lost to another thread
  uint64_t contended_locks = 0;  // mutex, rwlock: acquisitions that found the lock taken
};

struct ApplyOutcome {
  bool applied = false;
  uint64_t staleness = 0;  // see each algorithm; 0 for seq
  // The algorithm refreshed the caller's replica in the same pass (HOGWILD!):
  // it holds the parameters as of `version`, and the next read may be skipped.
  bool refreshed = false;
  uint64_t version = 0;
};

class SharedParameters {
 public:
  virtual ~SharedParameters() = default;

  // Copies the current parameters into `local` and returns the version read.
  virtual uint64_t read(std::span<float> local, Backoff& backoff, ThreadCounters& counters) = 0;
  // Applies one optimizer step with `grad`, computed on version `read_version`
  // by thread `thread`. `replica` is the caller's copy, which an algorithm may
  // refresh on the way (see ApplyOutcome). The step's rate is the
  // optimizer's times `lr_scale` (the schedule's factor for this gradient).
  virtual ApplyOutcome apply(std::span<const float> grad, uint64_t read_version, int thread, Backoff& backoff,
                             ThreadCounters& counters, std::span<float> replica, float lr_scale = 1) = 0;
  // The parameters, while no thread runs.
  virtual void snapshot(std::span<float> out) const = 0;
  // Updates applied so far.
  virtual uint64_t updates() const = 0;
  // The parameters, the updates applied and the optimizer's state wherever it
  // lives (under the lock, in the latest Leashed version, with each HOGWILD!
  // thread), for checkpoints, while no thread runs. load_state refuses state
  // of another size, naming the record.
  virtual void save_state(StateWriter& out) const = 0;
  virtual void load_state(StateReader& in) = 0;
  // What the run's summary says of the algorithm's own counts (the threads'
  // `totals`), as (label, text) lines: none by default.
  virtual std::vector<std::pair<std::string, std::string>> notes(const ThreadCounters& totals) const {
    static_cast<void>(totals);
    return {};
  }
};

// A count of updates or optimizer steps from a checkpoint: refused (naming
// the record) beyond 2^53, as the optimizers' own step counts are, where a
// crafted file would overflow the counts it steps on.
uint64_t take_update_count(StateReader& in, std::string_view name);

// The algorithm's shared parameters (config.make_parameters), starting from
// `initial`. For seq, `initial` must be the one thread's replica, which then
// is the storage (no copies).
std::unique_ptr<SharedParameters> make_shared_parameters(const ShmConfig& config, std::span<float> initial);

}  // namespace ptrain
