#pragma once
// Shared-memory asynchronous SGD: T threads train one shared model with an
// algorithm its strategy's options chose (shm_strategies.hpp). Each thread has its own model replica to
// compute gradients in, and its own shuffled pass order over the whole
// training set. The run goes in rounds of --check-every updates; between
// rounds, with every thread waiting, the training loss of the shared model is
// measured on a fixed set, and the run stops at the target loss, the epoch or
// time limit, or when it diverges. Rounds also end at every epoch, where the
// shared model is evaluated on the test set. The clock counts only the rounds.
//
// Checkpoints are taken between rounds too, where every thread waits at the
// round's barrier: there every gradient handed out has been applied, no
// Leashed version is half-published and no HOGWILD! chunk half-written, so
// the state is consistent without a lock or a pause on the training path. A
// checkpoint every N gradients ends a round of its own (without a loss check);
// the threads wait only while the state is copied, and the caller writes it
// while they train on. A run resumed from one goes on from that state: with
// one thread (seq) it ends with the bits of the run never interrupted; with
// several, where the threads' interleaving is timing, with the same quality.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/count_histogram.hpp"
#include "core/dataset.hpp"
#include "core/model.hpp"
#include "shm/shared_parameters.hpp"
#include "shm/shm_config.hpp"

namespace ptrain {

struct LossCheck {
  uint64_t updates = 0;  // gradients applied so far
  double seconds = 0;    // training time so far
  double loss = 0;       // training loss of the shared model on the loss set
};

// One epoch (passes over the training set counted in samples of all threads
// together), or the part of one the run ended in.
struct ShmEpoch {
  size_t epoch = 0;           // 1-based
  uint64_t gradients = 0;     // computed in this epoch, by all threads
  double train_loss = 0;      // mean batch loss of those gradients
  Metrics test;               // of the shared model at the epoch's end
  double seconds = 0;         // training time of the epoch
};

struct AsyncSgdResult {
  std::vector<LossCheck> checks;  // the first is the initial model
  std::vector<ShmEpoch> epochs;   // with a test set only
  std::optional<double> seconds_to_target;
  std::string stopped_by;  // "target", "epochs", "time limit" or "diverged"
  bool diverged = false;
  std::string diverged_why;  // e.g. "training loss nan at 1200 updates"
  double final_loss = 0;     // the last check's
  uint64_t gradients = 0;    // computed by all threads
  std::vector<uint64_t> thread_gradients;  // by each
  ThreadCounters totals;     // summed over threads
  // What the algorithm says of its counts, for the summary (SharedParameters::notes).
  std::vector<std::pair<std::string, std::string>> notes;
  CountHistogram staleness;  // of the gradients applied
  uint64_t backoff_waits = 0;
  double backoff_us = 0;
  double train_seconds = 0;  // in rounds, checks excluded
  double wall_seconds = 0;
  std::vector<float> final_params;
  std::vector<int> cpus;  // each thread's CPU when bound (-1: not bound)
  PlacementRecord placement;  // where the threads and the shared parameters went
};

using ReplicaFactory = std::function<std::unique_ptr<Model>()>;
using LossCheckCallback = std::function<void(const LossCheck&)>;

struct ShmCallbacks {
  LossCheckCallback on_check;                   // each training-loss check, the first included
  std::function<void(const ShmEpoch&)> on_epoch;  // after each epoch's test evaluation
  // A checkpoint is due (ShmConfig::checkpoint_every): the run's whole state
  // as records (core/state_stream.hpp), taken after `gradients` of all threads
  // while every thread waits. Empty: no checkpoints.
  std::function<void(uint64_t gradients, std::vector<std::byte> state)> on_checkpoint;
};

// A run to go on from: the state on_checkpoint was given, and where it was
// read (for messages).
struct ShmResume {
  std::span<const std::byte> state;
  std::string source;
};

// Throws ptrain::Error for an impossible configuration or a checkpoint this
// run cannot go on from (naming the record), and InterruptedError
// (core/run_failure.hpp) with the first error a thread met (naming it) after
// stopping the others. Divergence is not an error: it ends the run and is
// reported. The shared model is evaluated on `test_set` at the end of each
// epoch and of the run (if not null). With `resume`, the run goes on from
// that checkpoint: its loss checks, epochs and counters include those before.
AsyncSgdResult run_async_sgd(const ShmConfig& config, const Dataset& train_set, const Dataset& loss_set,
                             const ReplicaFactory& make_replica, const ShmCallbacks& callbacks = {},
                             const Dataset* test_set = nullptr, const ShmResume* resume = nullptr);

}  // namespace ptrain
