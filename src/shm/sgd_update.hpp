#pragma once
// The plain SGD step the shared-memory algorithms apply, in place or into a
// new version. (Kept here, not in optim/: HOGWILD! needs it element by element
// through atomics, Leashed-SGD out of place.)
#include <cassert>
#include <span>

namespace ptrain {

// params -= lr * grad
inline void sgd_update(std::span<float> params, std::span<const float> grad, float lr) {
  assert(params.size() == grad.size());
  float* p = params.data();
  const float* g = grad.data();
  for (size_t i = 0, n = params.size(); i < n; ++i) p[i] -= lr * g[i];
}

// out = params - lr * grad
inline void sgd_update_into(std::span<float> out, std::span<const float> params, std::span<const float> grad,
                            float lr) {
  assert(out.size() == params.size() && params.size() == grad.size());
  float* o = out.data();
  const float* p = params.data();
  const float* g = grad.data();
  for (size_t i = 0, n = out.size(); i < n; ++i) o[i] = p[i] - lr * g[i];
}

}  // namespace ptrain
