#include "sync/pipeline_links.hpp"

#include <fmt/format.h>

#include <array>

#include "comm/message_tags.hpp"
#include "core/error.hpp"

namespace ptrain {

namespace {

// A per-sample shape on the wire: its rank, then its dimensions.
constexpr size_t kMaxDims = 7;
using ShapeMessage = std::array<int64_t, kMaxDims + 1>;

size_t numel(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (const int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

std::span<std::byte> bytes_of(Activations& a) { return std::as_writable_bytes(std::span<float>(a.values)); }
std::span<const std::byte> bytes_of(const Activations& a) { return std::as_bytes(std::span<const float>(a.values)); }

void shape_into(Activations& a, std::vector<int64_t> shape) {
  a.values.resize(numel(shape));
  a.shape = std::move(shape);
}

// Times what it spans as idle: the stage waits for a neighbour.
class Idle {
 public:
  explicit Idle(double& seconds) : seconds_(seconds) {}
  ~Idle() { seconds_ += clock_.seconds(); }
  Idle(const Idle&) = delete;
  Idle& operator=(const Idle&) = delete;

 private:
  double& seconds_;
  Stopwatch clock_;
};

}  // namespace

void PipelineLinks::send_shape_once(const Activations& out) {
  if (shape_sent_) return;
  if (out.shape.size() < 1 || out.shape.size() - 1 > kMaxDims)
    throw Error(fmt::format("pipeline: activations of {} dimensions per sample cross a stage boundary (at most {})",
                            out.shape.size() - 1, kMaxDims));
  ShapeMessage m{};
  m[0] = static_cast<int64_t>(out.shape.size() - 1);
  for (size_t d = 1; d < out.shape.size(); ++d) m[d] = out.shape[d];
  comm_.send(next_, kTagPipelineShape, std::as_bytes(std::span<const int64_t>(m)));
  shape_sent_ = true;
}

void PipelineLinks::receive_shape_once() {
  if (shape_received_) return;
  ShapeMessage m{};
  comm_.recv(previous_, kTagPipelineShape, std::as_writable_bytes(std::span<int64_t>(m)));
  if (m[0] < 0 || m[0] > static_cast<int64_t>(kMaxDims))
    throw Error(fmt::format("pipeline: rank {} sent a shape of {} dimensions", previous_, m[0]));
  incoming_sample_shape_.assign(m.begin() + 1, m.begin() + 1 + m[0]);
  shape_received_ = true;
}

std::vector<int64_t> PipelineLinks::incoming_shape(size_t rows) const {
  std::vector<int64_t> shape{static_cast<int64_t>(rows)};
  shape.insert(shape.end(), incoming_sample_shape_.begin(), incoming_sample_shape_.end());
  return shape;
}

void PipelineLinks::send_forward(const Activations& out) {
  Idle idle(idle_seconds_);
  send_shape_once(out);
  comm_.send(next_, kTagPipelineActivations, bytes_of(out));
  bytes_sent_ += out.values.size() * sizeof(float);
}

void PipelineLinks::receive_forward(size_t rows, Activations& in) {
  Idle idle(idle_seconds_);
  receive_shape_once();
  shape_into(in, incoming_shape(rows));
  comm_.recv(previous_, kTagPipelineActivations, bytes_of(in));
  bytes_received_ += in.values.size() * sizeof(float);
}

void PipelineLinks::send_backward(const Activations& grad_in) {
  Idle idle(idle_seconds_);
  comm_.send(previous_, kTagPipelineGradients, bytes_of(grad_in));
  bytes_sent_ += grad_in.values.size() * sizeof(float);
}

void PipelineLinks::receive_backward(const std::vector<int64_t>& shape, Activations& grad_out) {
  Idle idle(idle_seconds_);
  shape_into(grad_out, shape);
  comm_.recv(next_, kTagPipelineGradients, bytes_of(grad_out));
  bytes_received_ += grad_out.values.size() * sizeof(float);
}

void PipelineLinks::send_forward_receive_backward(const Activations& out, const std::vector<int64_t>& shape,
                                                  Activations& grad_out) {
  Idle idle(idle_seconds_);
  send_shape_once(out);
  shape_into(grad_out, shape);
  comm_.sendrecv(next_, kTagPipelineActivations, bytes_of(out), next_, kTagPipelineGradients, bytes_of(grad_out));
  bytes_sent_ += out.values.size() * sizeof(float);
  bytes_received_ += grad_out.values.size() * sizeof(float);
}

void PipelineLinks::send_backward_receive_forward(const Activations& grad_in, size_t rows, Activations& in) {
  Idle idle(idle_seconds_);
  receive_shape_once();
  shape_into(in, incoming_shape(rows));
  comm_.sendrecv(previous_, kTagPipelineGradients, bytes_of(grad_in), previous_, kTagPipelineActivations,
                 bytes_of(in));
  bytes_sent_ += grad_in.values.size() * sizeof(float);
  bytes_received_ += in.values.size() * sizeof(float);
}

}  // namespace ptrain
