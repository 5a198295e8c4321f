#pragma once
// The Model interface every strategy drives. Parameters and gradients are two
// flat float buffers with the same layout; the layers below see only spans.
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dataset.hpp"
#include "core/flat_layout.hpp"
#include "core/model_stage.hpp"
#include "core/state_stream.hpp"

namespace ptrain {

// A model's quality over a data set. Which figure matters is the task's
// (core/dataset.hpp): accuracy for classification, perplexity for language
// modelling; both come from the same sums.
struct Metrics {
  double loss = 0;        // mean cross-entropy per target
  double accuracy = 0;    // fraction of targets predicted right (the class, or the next token)
  double perplexity = 0;  // exp(loss): language modelling's figure
  size_t samples = 0;
  size_t targets = 0;  // one per sample (classification), or one per position

  // From a summed loss and a count of right answers over `targets` targets
  // (0: one per sample).
  static Metrics from_sums(double loss_sum, size_t correct, size_t samples, size_t targets = 0) {
    Metrics m;
    m.samples = samples;
    m.targets = targets > 0 ? targets : samples;
    if (m.targets > 0) {
      m.loss = loss_sum / static_cast<double>(m.targets);
      m.accuracy = static_cast<double>(correct) / static_cast<double>(m.targets);
      m.perplexity = std::exp(m.loss);
    }
    return m;
  }
};

// What a model computing on a device (a GPU) moved between host and device
// memory: the parameters in and the gradients out every step (seed 000's
// hybrid: the host keeps the model), and each batch in.
struct DeviceTraffic {
  uint64_t to_device_bytes = 0;
  uint64_t to_host_bytes = 0;
  double seconds = 0;  // spent copying (waiting for the device's own work excluded)
  uint64_t steps = 0;  // forward_backward calls
};

class Model {
 public:
  virtual ~Model() = default;

  virtual std::string name() const = 0;
  virtual const FlatLayout& layout() const = 0;
  virtual std::span<float> params() = 0;
  virtual std::span<float> grads() = 0;

  // Overwrites grads() with the gradient of the mean loss over the batch and
  // returns that loss.
  virtual float forward_backward(const Batch& batch) = 0;

  // Loss and accuracy over a whole data set, without touching grads().
  virtual Metrics evaluate(const Dataset& data) = 0;
  // The shape of the model's output for `batch` (a forward pass, no
  // gradient), to check a model from elsewhere against the data before
  // training; empty for a model built to the data's shape, which cannot differ.
  virtual std::vector<int64_t> output_shape(const Batch& /*batch*/) { return {}; }

  // Called during forward_backward() as soon as the gradient of layout segment
  // `segment` is final, so its communication can start while backward goes on.
  using GradientReadyHook = std::function<void(size_t segment)>;
  // Models that can tell (LibTorch's autograd hooks) keep the hook and return
  // true; for the others every gradient is final when forward_backward() returns.
  // An empty hook removes it.
  virtual bool set_gradient_ready_hook(GradientReadyHook /*hook*/) { return false; }

  // Host <-> device copies so far (all zero for a model on the CPU).
  virtual DeviceTraffic device_traffic() const { return {}; }

  // What a model keeps from one step to the next besides its parameters (a
  // recurrent model's state carried between batches, its dropout generator),
  // as checkpoint records: a resumed run goes on with the same bits. Most
  // models keep nothing.
  virtual void save_state(StateWriter& /*out*/) const {}
  virtual void load_state(StateReader& /*in*/) {}

  // Pipelines (core/model_stage.hpp): the model's layers in order, together
  // covering its layout once; empty for a model that cannot be split, and
  // then `why_not` says why.
  virtual std::vector<ModelLayer> layers(std::string& why_not) const {
    why_not = "model " + name() + " is not a sequence of layers, so it cannot be split into pipeline stages";
    return {};
  }
  // The stage of layers [first, end) of layers(), over this model's
  // parameters and gradients.
  virtual std::unique_ptr<ModelStage> stage(size_t /*first*/, size_t /*end*/) { return nullptr; }
  // A pipeline stage's worker keeps layers [first, end) of layers() and frees
  // the others: layout(), params() and grads() then cover those layers alone,
  // layers() still lists the whole model's (its segments numbered as before),
  // stage() takes ranges within the kept layers, and forward_backward(),
  // evaluate() and output_shape() refuse. Once only: false where the model
  // cannot (it keeps everything).
  virtual bool keep_layers(size_t /*first*/, size_t /*end*/) { return false; }
};

}  // namespace ptrain
