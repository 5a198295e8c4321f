#pragma once
// What pipeline model parallelism needs of a model (sync/pipeline_strategy):
// its layers in order, each holding a run of the layout's segments, and a
// stage of consecutive layers that runs micro-batches forward and backward
// one at a time, keeping each one's activations until its backward. A stage
// sees only floats: the activations that cross a boundary between workers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dataset.hpp"

namespace ptrain {

// One layer a pipeline may place on its own: layout segments [first_segment,
// first_segment + segments), and a name for messages ("1: Linear").
struct ModelLayer {
  std::string name;
  size_t first_segment = 0;
  size_t segments = 0;
};

// A tensor crossing a stage boundary, samples first: activations forward,
// their gradients backward.
struct Activations {
  std::vector<int64_t> shape;  // {rows, per-sample dims...}
  std::vector<float> values;
};

// What evaluating a data set adds up (Metrics::from_sums makes the figures).
struct EvaluationSums {
  double loss = 0;     // cross-entropy summed over the targets
  uint64_t correct = 0;  // targets predicted right
};

class ModelStage {
 public:
  virtual ~ModelStage() = default;
  // Micro-batch `slot` forward through the stage's layers, keeping what its
  // backward needs. The first stage reads `micro`'s features, the others
  // `in`. The last stage returns the mean loss over `micro`'s targets; the
  // others fill `out` and return 0.
  virtual float forward(size_t slot, const Batch& micro, const Activations& in, Activations& out) = 0;
  // Micro-batch `slot` backward: overwrites the stage's segments of the
  // model's grads() with that micro-batch's gradient (of its mean loss), the
  // last stage from its loss, the others from `grad_out`. Every stage but the
  // first fills `grad_in`, the gradient of its input. Drops what forward kept.
  virtual void backward(size_t slot, const Activations& grad_out, Activations& grad_in) = 0;
  // Evaluation: `micro` forward with no gradient, in evaluation mode
  // (Dropout off), keeping nothing. The first stage reads `micro`'s features,
  // the others `in`; every stage but the last fills `out`, and the last adds
  // its outputs' loss and right answers against `micro`'s targets to `sums`.
  virtual void infer(const Batch& micro, const Activations& in, Activations& out, EvaluationSums& sums) = 0;
  // Bytes of activations held now for backward passes still to come.
  virtual size_t held_bytes() const = 0;
  // Drops whatever a failed step left held.
  virtual void clear() = 0;
};

}  // namespace ptrain
