#pragma once
// A pipeline stage's messages with the stages before and after it:
// activations forward, their gradients backward. A boundary's per-sample
// shape crosses once, before its first activations (both sides know each
// micro-batch's rows); a gradient has the shape of the activations it
// answers. Where a stage sends one way and then waits for the other, both go
// as one exchange (Communicator::sendrecv), so that two neighbours that each
// send before they receive never wait on each other.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "core/model_stage.hpp"
#include "core/stopwatch.hpp"

namespace ptrain {

class PipelineLinks {
 public:
  // `previous`, `next`: the neighbours' ranks on `comm` (-1: none).
  PipelineLinks(Communicator& comm, int previous, int next) : comm_(comm), previous_(previous), next_(next) {}

  void send_forward(const Activations& out);
  void receive_forward(size_t rows, Activations& in);
  void send_backward(const Activations& grad_in);
  // `shape`: of the activations this gradient answers.
  void receive_backward(const std::vector<int64_t>& shape, Activations& grad_out);
  // The pairs: to `next` and back from it; to `previous` and back from it.
  void send_forward_receive_backward(const Activations& out, const std::vector<int64_t>& shape,
                                     Activations& grad_out);
  void send_backward_receive_forward(const Activations& grad_in, size_t rows, Activations& in);

  double idle_seconds() const { return idle_seconds_; }
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }

 private:
  void send_shape_once(const Activations& out);
  void receive_shape_once();
  std::vector<int64_t> incoming_shape(size_t rows) const;

  Communicator& comm_;
  int previous_, next_;
  bool shape_sent_ = false;
  std::vector<int64_t> incoming_sample_shape_;  // known once received
  bool shape_received_ = false;
  double idle_seconds_ = 0;
  uint64_t bytes_sent_ = 0, bytes_received_ = 0;
};

}  // namespace ptrain
