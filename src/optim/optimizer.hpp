#pragma once
// Optimizers over flat spans. They run wherever parameters live: on a worker's
// replica, or on a parameter-server shard that owns a slice of the buffer.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/state_stream.hpp"
#include "optim/lr_schedule.hpp"

namespace ptrain {

enum class OptimizerKind { Sgd, Momentum, Nesterov, Adam };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Adam;
  float lr = 1e-3f;
  float momentum = 0.9f;      // Momentum and Nesterov
  float weight_decay = 0.0f;  // L2 penalty added to the gradient, as torch.optim does
  float beta1 = 0.9f;         // Adam
  float beta2 = 0.999f;       // Adam
  float eps = 1e-8f;          // Adam
  LrSchedule schedule{};      // how lr changes with the epoch (optim/lr_schedule.hpp)
};

// The learning rate for an update taken `epoch` epochs into the run.
float lr_at(const OptimizerConfig& config, double epoch);

std::string to_string(OptimizerKind kind);

// Optimizer state kept outside the optimizer, for the shared-memory
// strategies: a Leashed-SGD version carries its own, a HOGWILD! thread keeps
// its own. `slots` point at state_slots() arrays of floats aligned with the
// params given to step_with (a chunk of a larger vector: any offset);
// `steps_before` counts the steps this state has seen (0 for the first).
struct OptimizerState {
  std::array<float*, 2> slots{};
  int64_t steps_before = 0;
  float lr_scale = 1;  // this step's rate is the optimizer's times this (a schedule's factor)
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // params -= update(grad), with the optimizer's own state. Both spans have
  // the size given at construction.
  virtual void step(std::span<float> params, std::span<const float> grad) = 0;
  // The same step a slice at a time, each as soon as its gradient is final
  // (the hybrid strategy updates a bucket's parameters while later buckets
  // are still on the wire): step_slice over disjoint slices [offset, offset +
  // params.size()) that cover the buffer once, then end_step(). The same bits
  // as step(): every kernel is element-wise.
  virtual void step_slice(size_t offset, std::span<float> params, std::span<const float> grad) = 0;
  virtual void end_step() = 0;
  // Arrays of state per parameter: 0 (sgd), 1 (momentum, nesterov: the
  // velocity), 2 (adam: the two moments).
  virtual size_t state_slots() const = 0;
  // One step with state the caller holds, through the same kernels as step()
  // (which is step_with on the optimizer's own state). params and grad have
  // the same size, any size. Safe to call from several threads at once.
  virtual void step_with(std::span<float> params, std::span<const float> grad, const OptimizerState& state) const = 0;
  virtual size_t size() const = 0;
  // Changes the learning rate from the next step on (for schedules).
  virtual void set_lr(float lr) = 0;
  // Everything a next step depends on (its kind, step count, learning rate,
  // velocity or moments), for checkpoints. load_state refuses another kind's
  // or size's state, naming it, and keeps the learning rate it was made with
  // (a run resumed after a divergence may go on with a smaller one).
  virtual void save_state(StateWriter& out) const = 0;
  virtual void load_state(StateReader& in) = 0;
};

// Throws ptrain::Error naming the first bad option as the plan's field (e.g.
// "optimizer.lr must be > 0 (got -0.1)"; the CLI checks its flags before). Every field is checked, whatever the kind,
// so a typo in an unused option is not silently ignored.
void validate_optimizer_config(const OptimizerConfig& config);

// An optimizer for `size` parameters; its state (velocity, moments) is sized
// once here, so step() allocates nothing. Throws ptrain::Error on lr <= 0,
// momentum outside [0, 1), negative weight decay, betas outside [0, 1), eps <= 0.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, size_t size);

}  // namespace ptrain
