#pragma once
// What a shared-memory asynchronous SGD run is: the algorithm that guards the
// one shared parameter vector, its threads, the step, and when to stop.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "optim/optimizer.hpp"
#include "topology/placer.hpp"

namespace ptrain {

class SharedParameters;
struct ShmConfig;

// Makes an algorithm's shared parameters (shared_parameters.hpp) from
// `initial`, for `config`'s threads and optimizer; each shared-memory
// strategy's options give theirs (shm_strategies.hpp).
using SharedParametersFactory =
    std::function<std::unique_ptr<SharedParameters>(const ShmConfig& config, std::span<float> initial)>;

enum class BackoffKind { None, Exponential, ExponentialJitter };

// After a contended lock or a failed swap: wait min_us, then twice as long each
// time up to max_us; with jitter, a uniform fraction of that (full jitter).
struct BackoffConfig {
  BackoffKind kind = BackoffKind::None;
  double min_us = 1;
  double max_us = 1000;
};

std::string to_string(BackoffKind kind);

struct ShmConfig {
  // The algorithm: its strategy's name (in messages and checkpoints) and its
  // shared parameters. A strategy's options fill both (their shm_config()).
  std::string algorithm;
  SharedParametersFactory make_parameters;
  int threads = 2;
  size_t batch = 16;
  OptimizerConfig optimizer{.kind = OptimizerKind::Sgd, .lr = 0.01f};  // applied to the shared parameters
  // Stop after this many passes over the training set, counted in samples by all threads together.
  double epochs = 10;
  BackoffConfig backoff;
  // Where thread t runs and its replica lives, and the shared parameters
  // (topology/placer.hpp); default: nothing bound.
  Placer placer;
  uint64_t seed = 42;
  double target_loss = 0;     // stop once the training loss is at most this (0: no target)
  size_t check_every = 0;     // updates between training-loss checks (0: a tenth of an epoch)
  double diverge_above = 1e3; // a loss above this (or not finite) ends the run as diverged
  double time_limit_s = 0;    // stop after this much training time (0: no limit)
  uint64_t max_gradients = 0; // stop after this many gradients of all threads together (0: no limit)
  // Checkpoints, when the caller takes them (ShmCallbacks::on_checkpoint):
  // every this many gradients of all threads together; else at the first
  // loss check this many seconds after the last checkpoint; else (both 0) at
  // the end of every epoch and where the run ends.
  uint64_t checkpoint_every = 0;
  double checkpoint_every_s = 0;
};

// Throws ptrain::Error naming the first impossible option as the plan's field
// (e.g. "run.workers"); run() checks the plan before, the CLI its flags.
void validate_shm_config(const ShmConfig& config);

}  // namespace ptrain
