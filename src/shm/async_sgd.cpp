#include "shm/async_sgd.hpp"

#include <fmt/format.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/stopwatch.hpp"
#include "core/thread_affinity.hpp"

namespace ptrain {

namespace {

constexpr uint64_t kOrderStream = 0x5348'4d00;  // "SHM": each thread's pass order

// One thread's endless sequence of batches: its own shuffle of the whole set, reshuffled every pass.
class BatchStream {
 public:
  BatchStream(const Dataset& data, size_t batch, uint64_t seed) : data_(data), batch_(batch), rng_(seed) {
    order_.resize(data.size());
    std::iota(order_.begin(), order_.end(), size_t{0});
    rng_.shuffle(std::span<size_t>(order_));
  }

  const Batch& next() {
    indices_.clear();
    while (indices_.size() < batch_) {
      if (at_ == order_.size()) {
        rng_.shuffle(std::span<size_t>(order_));
        at_ = 0;
      }
      indices_.push_back(order_[at_++]);
    }
    current_.gather(data_, indices_);
    return current_;
  }

 private:
  const Dataset& data_;
  size_t batch_;
  Rng rng_;
  std::vector<size_t> order_;
  size_t at_ = 0;
  std::vector<size_t> indices_;
  Batch current_;
};

// What the threads share besides the parameters: the round's budget and the reasons to stop.
struct RunState {
  std::atomic<int64_t> budget{0};  // gradients left to compute in this round
  std::atomic<bool> halt{false};   // a thread diverged or failed: stop the round
  std::atomic<bool> done{false};   // no more rounds
  std::mutex mutex;                // guards the fields below
  std::string diverged_why;
  std::exception_ptr error;
  int error_thread = -1;
};

struct ThreadTally {
  ThreadCounters counters;
  CountHistogram staleness;
  uint64_t gradients = 0;
  double loss_sum = 0;  // of its batch losses
  uint64_t backoff_waits = 0;
  double backoff_us = 0;
  int cpu = -1;
};

}  // namespace

AsyncSgdResult run_async_sgd(const ShmConfig& config, const Dataset& train_set, const Dataset& loss_set,
                             const ReplicaFactory& make_replica, const ShmCallbacks& callbacks,
                             const Dataset* test_set) {
  validate_shm_config(config);
  if (train_set.size() == 0) throw Error("training set '" + train_set.name() + "' is empty");
  if (loss_set.size() == 0) throw Error("loss set '" + loss_set.name() + "' is empty");
  Stopwatch wall;
  const size_t threads = static_cast<size_t>(config.threads);
  std::vector<std::unique_ptr<Model>> replicas;
  for (size_t t = 0; t < threads; ++t) replicas.push_back(make_replica());
  auto evaluator = make_replica();
  for (const auto& r : replicas)
    if (r->params().size() != evaluator->params().size())
      throw Error("shared-memory SGD: the model replicas differ in size");
  // Every replica starts from the evaluator's initial weights (the seed's); seq trains replica 0 in place.
  std::vector<float> initial(evaluator->params().begin(), evaluator->params().end());
  std::span<float> storage = replicas[0]->params();
  std::copy(initial.begin(), initial.end(), storage.begin());
  auto shared = make_shared_parameters(config, storage);

  const double updates_per_epoch = static_cast<double>(train_set.size()) / static_cast<double>(config.batch);
  auto total_gradients = static_cast<uint64_t>(std::ceil(config.epochs * updates_per_epoch));
  if (config.max_gradients > 0) total_gradients = std::min(total_gradients, config.max_gradients);
  // The gradient count at which epoch k (1-based) ends.
  auto epoch_end = [&](size_t k) {
    return static_cast<uint64_t>(std::ceil(static_cast<double>(k) * updates_per_epoch));
  };
  const uint64_t check_every =
      config.check_every > 0 ? config.check_every : std::max<uint64_t>(1, std::llround(updates_per_epoch / 10));

  RunState state;
  std::vector<ThreadTally> tallies(threads);
  std::barrier round_start(static_cast<std::ptrdiff_t>(threads + 1));
  std::barrier round_end(static_cast<std::ptrdiff_t>(threads + 1));

  auto worker = [&](size_t t) {
    ThreadTally& tally = tallies[t];
    if (config.pin) tally.cpu = pin_current_thread(static_cast<int>(t));
    Model& model = *replicas[t];
    BatchStream stream(train_set, config.batch, derive_seed(config.seed, kOrderStream + t));
    Backoff backoff(config.backoff, derive_seed(config.seed, kOrderStream + 1000 + t));
    std::optional<uint64_t> fresh;  // the replica already holds this version (refreshed by the last apply)
    while (true) {
      round_start.arrive_and_wait();
      if (state.done.load(std::memory_order_acquire)) break;
      try {
        while (!state.halt.load(std::memory_order_relaxed) &&
               state.budget.fetch_sub(1, std::memory_order_relaxed) > 0) {
          const Batch& batch = stream.next();
          const uint64_t read_version = fresh ? *fresh : shared->read(model.params(), backoff, tally.counters);
          const float loss = model.forward_backward(batch);
          ++tally.gradients;
          tally.loss_sum += loss;
          if (!std::isfinite(loss) || loss > config.diverge_above) {
            std::lock_guard lock(state.mutex);
            if (state.diverged_why.empty())
              // The thread's own count: the shared one may be changing under another thread's lock.
              state.diverged_why =
                  fmt::format("thread {}'s batch loss was {} at its gradient {}", t, loss, tally.gradients);
            state.halt.store(true, std::memory_order_relaxed);
            break;
          }
          const ApplyOutcome outcome =
              shared->apply(model.grads(), read_version, static_cast<int>(t), backoff, tally.counters, model.params());
          if (outcome.applied) tally.staleness.record(outcome.staleness);
          fresh = outcome.refreshed ? std::optional<uint64_t>(outcome.version) : std::nullopt;
        }
      } catch (...) {
        std::lock_guard lock(state.mutex);
        if (!state.error) {
          state.error = std::current_exception();
          state.error_thread = static_cast<int>(t);
        }
        state.halt.store(true, std::memory_order_relaxed);
      }
      round_end.arrive_and_wait();
    }
    tally.backoff_waits = backoff.waits();
    tally.backoff_us = backoff.waited_us();
  };

  AsyncSgdResult result;
  auto check = [&](double seconds) {
    shared->snapshot(evaluator->params());
    const LossCheck c{shared->updates(), seconds, evaluator->evaluate(loss_set).loss};
    result.checks.push_back(c);
    if (callbacks.on_check) callbacks.on_check(c);
    return c;
  };
  // Test metrics at the end of an epoch (or of the run, part way through one).
  uint64_t epoch_start_gradients = 0;
  double epoch_start_loss = 0, epoch_start_seconds = 0;
  auto end_epoch = [&] {
    if (!test_set) return;
    uint64_t gradients = 0;
    double loss_sum = 0;
    for (const auto& tally : tallies) gradients += tally.gradients, loss_sum += tally.loss_sum;
    ShmEpoch e;
    e.epoch = result.epochs.size() + 1;
    e.gradients = gradients - epoch_start_gradients;
    e.train_loss = e.gradients > 0 ? (loss_sum - epoch_start_loss) / static_cast<double>(e.gradients) : 0.0;
    e.seconds = result.train_seconds - epoch_start_seconds;
    shared->snapshot(evaluator->params());
    e.test = evaluator->evaluate(*test_set);
    epoch_start_gradients = gradients, epoch_start_loss = loss_sum, epoch_start_seconds = result.train_seconds;
    result.epochs.push_back(e);
    if (callbacks.on_epoch) callbacks.on_epoch(e);
  };

  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  // The threads are released from the start barrier however the loop below ends.
  struct Finish {
    RunState& state;
    std::barrier<>& start;
    std::vector<std::thread>& pool;
    ~Finish() {
      state.done.store(true, std::memory_order_release);
      start.arrive_and_wait();
      for (auto& th : pool) th.join();
    }
  };
  {
    Finish finish{state, round_start, pool};
    check(0);
    uint64_t started = 0;
    size_t epoch = 1;
    while (true) {
      if (started >= total_gradients) {
        result.stopped_by = config.max_gradients > 0 && total_gradients == config.max_gradients &&
                                    total_gradients < epoch_end(static_cast<size_t>(std::ceil(config.epochs)))
                                ? "max steps"
                                : "epochs";
        break;
      }
      // With a test set, rounds also end where epochs do, for the epoch's evaluation.
      const uint64_t round = std::min({check_every, total_gradients - started,
                                       test_set ? epoch_end(epoch) - started : total_gradients - started});
      state.budget.store(static_cast<int64_t>(round), std::memory_order_relaxed);
      Stopwatch clock;
      round_start.arrive_and_wait();
      round_end.arrive_and_wait();
      result.train_seconds += clock.seconds();
      started += round;
      if (state.error) break;
      const LossCheck c = check(result.train_seconds);
      if (started == epoch_end(epoch)) {
        end_epoch();
        ++epoch;
      }
      if (!state.diverged_why.empty()) {
        result.diverged_why = state.diverged_why;
      } else if (!std::isfinite(c.loss) || c.loss > config.diverge_above) {
        result.diverged_why = fmt::format("training loss {} at {} updates", c.loss, c.updates);
      }
      if (!result.diverged_why.empty()) {
        result.diverged = true;
        result.stopped_by = "diverged";
        break;
      }
      if (config.target_loss > 0 && c.loss <= config.target_loss) {
        result.seconds_to_target = result.train_seconds;
        result.stopped_by = "target";
        break;
      }
      if (config.time_limit_s > 0 && result.train_seconds >= config.time_limit_s) {
        result.stopped_by = "time limit";
        break;
      }
    }
  }
  // The run ended within an epoch (a target, a time limit, a fraction of an epoch): evaluate where it stopped.
  uint64_t computed = 0;
  for (const auto& tally : tallies) computed += tally.gradients;
  if (!state.error && (result.epochs.empty() || computed > epoch_start_gradients)) end_epoch();
  if (state.error) {
    try {
      std::rethrow_exception(state.error);
    } catch (const std::exception& e) {
      throw Error(fmt::format("shared-memory thread {} failed: {}", state.error_thread, e.what()));
    }
  }
  for (const auto& tally : tallies) {
    result.totals.applied += tally.counters.applied;
    result.totals.dropped += tally.counters.dropped;
    result.totals.failed_swaps += tally.counters.failed_swaps;
    result.totals.contended_locks += tally.counters.contended_locks;
    result.staleness.merge(tally.staleness);
    result.gradients += tally.gradients;
    result.thread_gradients.push_back(tally.gradients);
    result.backoff_waits += tally.backoff_waits;
    result.backoff_us += tally.backoff_us;
    result.cpus.push_back(tally.cpu);
  }
  result.final_loss = result.checks.back().loss;
  result.final_params.resize(initial.size());
  shared->snapshot(result.final_params);
  result.wall_seconds = wall.seconds();
  return result;
}

}  // namespace ptrain
