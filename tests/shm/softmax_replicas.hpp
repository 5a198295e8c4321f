#pragma once
// Softmax-regression replicas for the shared-memory runner's tests, all
// initialised alike (seed 3), sized for `data`.
#include <memory>

#include "core/dataset.hpp"
#include "model/softmax_regression.hpp"
#include "shm/async_sgd.hpp"

namespace ptrain::test {

inline ReplicaFactory softmax_replicas(const Dataset& data) {
  return [&data] { return std::make_unique<SoftmaxRegression>(data.sample_numel(), data.num_classes(), 3); };
}

}  // namespace ptrain::test
