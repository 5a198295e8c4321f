#pragma once
// Leashed-SGD (Bäckström et al., IPDPS 2021): consistent and lock-free. The
// shared state is one atomic pointer to the latest parameter version. A
// thread computes its gradient on the version it acquired; to apply it, it
// copies the latest version into a vector of its own, applies the update
// there and publishes it with compare-and-swap. A version carries the
// optimizer's state beside the parameters (velocity, Adam's moments and step
// count: its version number), so every version is exactly its predecessor
// after one optimizer step. When another thread published
// first, it retries on the new latest version, at most --persistence times,
// after which the gradient is dropped and counted. Every published version is
// thus its predecessor plus exactly one update. Staleness: versions published
// between the one a gradient was computed on and the one it is applied to.
#include <atomic>
#include <memory>

#include "optim/optimizer.hpp"
#include "shm/shared_parameters.hpp"
#include "shm/shm_strategies.hpp"
#include "shm/version_pool.hpp"

namespace ptrain {

class LeashedParameters final : public SharedParameters {
 public:
  // persistence: retries after a failed swap (-1: no bound).
  LeashedParameters(std::span<const float> initial, int threads, int persistence, const OptimizerConfig& optimizer);
  // With the update rule given (its step_with only; tests gate it to make
  // threads collide on purpose).
  LeashedParameters(std::span<const float> initial, int threads, int persistence, std::unique_ptr<Optimizer> rule);
  ~LeashedParameters() override;

  uint64_t read(std::span<float> local, Backoff& backoff, ThreadCounters& counters) override;
  ApplyOutcome apply(std::span<const float> grad, uint64_t read_version, int thread, Backoff& backoff,
                     ThreadCounters& counters, std::span<float> replica, float lr_scale = 1) override;
  void snapshot(std::span<float> out) const override;
  uint64_t updates() const override;
  void save_state(StateWriter& out) const override;
  void load_state(StateReader& in) override;
  std::vector<std::pair<std::string, std::string>> notes(const ThreadCounters& totals) const override;

  // While no thread runs (tests): the latest version's parent, and the free vectors.
  uint64_t latest_parent() const;
  const VersionPool& pool() const { return pool_; }

 private:
  // The latest version with a reference for the caller.
  ParamVersion* acquire_latest();
  ParamVersion* take_vector();

  size_t size_;                      // parameters; a version's vector holds them, then the optimizer's state
  std::unique_ptr<Optimizer> rule_;  // its kernels only: the state is each version's
  int persistence_;
  VersionPool pool_;
  std::atomic<ParamVersion*> latest_;
};

struct LeashedOptions : ShmLossChecks, ShmBackoff {
  static constexpr std::string_view name = "leashed";
  static constexpr std::string_view summary =
      "shared memory: Leashed-SGD, consistent and lock-free, versions published by compare-and-swap "
      "(Backstrom et al. 2021)";
  PTRAIN_SHM_COMMON
  int persistence = -1;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("persistence", s.persistence, "retries of a failed swap before the gradient is dropped (-1: no bound)",
          Range::at_least(-1));
    visit_backoff(s, visit);
    visit_checks(s, visit);
  }
  void check(int, const std::string& prefix, Problems& problems) const { check_backoff(prefix, problems); }
  ShmConfig shm_config() const;
};

}  // namespace ptrain
