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
#include "core/printable.hpp"
#include "core/rng.hpp"
#include "core/run_failure.hpp"
#include "core/state_stream.hpp"
#include "core/stopwatch.hpp"
#include "core/timeline.hpp"
#include "data/sharded_sampler.hpp"

namespace ptrain {

namespace {

constexpr uint64_t kOrderStream = 0x5348'4d00;  // "SHM": each thread's pass order

// One thread's endless sequence of batches: its own shuffle of the whole set,
// reshuffled every pass; or, from a token stream, its own rows of the stream
// in order, pass after pass (thread t as worker t of ShardedSampler's stream order).
class BatchStream {
 public:
  BatchStream(const Dataset& data, size_t batch, uint64_t seed, size_t thread, size_t threads)
      : data_(data), batch_(batch), rng_(seed) {
    if (data.stream()) {
      const ShardedSampler rows(data.size(), threads, thread, batch, seed, SampleOrder::Stream);
      for (size_t k = 0; k < rows.batches_per_epoch(); ++k) {
        const auto b = rows.batch(k);
        order_.insert(order_.end(), b.begin(), b.end());
      }
      return;
    }
    order_.resize(data.size());
    std::iota(order_.begin(), order_.end(), size_t{0});
    rng_.shuffle(std::span<size_t>(order_));
  }

  const Batch& next() {
    indices_.clear();
    while (indices_.size() < batch_) {
      if (at_ == order_.size()) {
        if (!data_.stream()) rng_.shuffle(std::span<size_t>(order_));
        at_ = 0;
      }
      indices_.push_back(order_[at_++]);
    }
    current_.gather(data_, indices_);
    return current_;
  }

  // Where it is in its pass and the generator of the next: the order itself,
  // since each pass reshuffles the one before.
  void save_state(StateWriter& out, const std::string& prefix) const {
    out.put_value(prefix + "order.rng", rng_.state());
    out.put(prefix + "order", order_);
    out.put_value(prefix + "order.at", static_cast<uint64_t>(at_));
  }
  void load_state(StateReader& in, const std::string& prefix) {
    rng_.set_state(in.take_value<uint64_t>(prefix + "order.rng"));
    std::vector<size_t> order = in.take_vector<size_t>(prefix + "order");
    // The order indexes the training set: it must be a pass over exactly this
    // one (a stream's: this thread's rows, which never change).
    std::vector<bool> seen(data_.size(), false);
    bool pass = data_.stream() ? order == order_ : order.size() == data_.size();
    for (size_t i = 0; pass && !data_.stream() && i < order.size(); ++i) {
      pass = order[i] < seen.size() && !seen[order[i]];
      if (pass) seen[order[i]] = true;
    }
    if (!pass)
      throw Error(fmt::format("{}: record '{}order' is not an order of this run's {} training samples", in.source(),
                              prefix, data_.size()));
    const auto at = in.take_value<uint64_t>(prefix + "order.at");
    if (at > order.size())
      throw Error(fmt::format("{}: record '{}order.at' is {}, past the end of the order ({} samples)", in.source(),
                              prefix, at, order.size()));
    order_ = std::move(order);
    at_ = static_cast<size_t>(at);
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
  uint64_t round_end = 0;          // the run's gradient count when the round's budget is spent (set between rounds)
  std::atomic<bool> halt{false};   // a thread diverged or failed: stop the round
  std::atomic<bool> done{false};   // no more rounds
  std::mutex mutex;                // guards the fields below
  std::string diverged_why;
  std::exception_ptr error;
  int error_thread = -1;
};

// A thread's own state: what it counts, where it is in its data, its backoff.
// The thread alone touches it while rounds run; the runner between rounds.
struct ThreadState {
  ThreadState(const Dataset& data, const ShmConfig& config, size_t t)
      : stream(data, config.batch, derive_seed(config.seed, kOrderStream + t), t, static_cast<size_t>(config.threads)),
        backoff(config.backoff, derive_seed(config.seed, kOrderStream + 1000 + t)) {}

  BatchStream stream;
  Backoff backoff;
  ThreadCounters counters;
  CountHistogram staleness;
  uint64_t gradients = 0;
  double loss_sum = 0;  // of its batch losses
  PlacedThread placed;  // where it runs (topology/placer.hpp)

  void save_state(StateWriter& out, size_t t) const {
    const std::string p = fmt::format("thread{}.", t);
    stream.save_state(out, p);
    backoff.save_state(out, p);
    out.put_value(p + "counters", counters);
    out.put(p + "staleness", staleness.bins);
    out.put_value(p + "gradients", gradients);
    out.put_value(p + "loss_sum", loss_sum);
  }
  void load_state(StateReader& in, size_t t) {
    const std::string p = fmt::format("thread{}.", t);
    stream.load_state(in, p);
    backoff.load_state(in, p);
    counters = in.take_value<ThreadCounters>(p + "counters");
    staleness.bins = in.take_vector<uint64_t>(p + "staleness");
    gradients = in.take_value<uint64_t>(p + "gradients");
    loss_sum = in.take_value<double>(p + "loss_sum");
  }
};

// Where the run is between rounds: what a checkpoint holds besides the
// threads' and the parameters' state and the results so far.
struct Position {
  uint64_t started = 0;     // gradients handed out (all computed, between rounds)
  uint64_t last_check = 0;  // where the last loss check was
  uint64_t epoch = 1;       // the epoch under way, 1-based (with a test set)
  uint64_t epoch_start_gradients = 0;  // gradients computed before it
  double epoch_start_loss = 0;         // their batch losses summed
  double epoch_start_seconds = 0;      // training time before it
};

}  // namespace

AsyncSgdResult run_async_sgd(const ShmConfig& config, const Dataset& train_set, const Dataset& loss_set,
                             const ReplicaFactory& make_replica, const ShmCallbacks& callbacks,
                             const Dataset* test_set, const ShmResume* resume) {
  validate_shm_config(config);
  if (train_set.size() == 0) throw Error("training set '" + train_set.name() + "' is empty");
  if (loss_set.size() == 0) throw Error("loss set '" + loss_set.name() + "' is empty");
  Stopwatch wall;
  const size_t threads = static_cast<size_t>(config.threads);
  // Each replica under its thread's memory policy, the shared parameters
  // under theirs (topology/placer.hpp): their pages are first touched there.
  std::vector<std::unique_ptr<Model>> replicas;
  for (size_t t = 0; t < threads; ++t) {
    const AllocationPolicy near = config.placer.allocations_near(static_cast<int>(t));
    replicas.push_back(make_replica());
  }
  auto evaluator = make_replica();
  for (const auto& r : replicas)
    if (r->params().size() != evaluator->params().size())
      throw Error("shared-memory SGD: the model replicas differ in size");
  // Every replica starts from the evaluator's initial weights (the seed's); seq trains replica 0 in place.
  std::vector<float> initial(evaluator->params().begin(), evaluator->params().end());
  std::span<float> storage = replicas[0]->params();
  std::copy(initial.begin(), initial.end(), storage.begin());
  auto shared = [&] {
    const AllocationPolicy where = config.placer.allocations_for_shared(config.threads);
    return make_shared_parameters(config, storage);
  }();

  const double updates_per_epoch = static_cast<double>(train_set.size()) / static_cast<double>(config.batch);
  auto total_gradients = static_cast<uint64_t>(std::ceil(config.epochs * updates_per_epoch));
  if (config.max_gradients > 0) total_gradients = std::min(total_gradients, config.max_gradients);
  // The gradient count at which epoch k (1-based) ends.
  auto epoch_end = [&](uint64_t k) {
    return static_cast<uint64_t>(std::ceil(static_cast<double>(k) * updates_per_epoch));
  };
  // The first epoch end after `g` gradients.
  auto next_epoch_end = [&](uint64_t g) {
    auto k = std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(g) / updates_per_epoch));
    while (k > 1 && epoch_end(k - 1) > g) --k;
    while (epoch_end(k) <= g) ++k;
    return epoch_end(k);
  };
  const uint64_t check_every =
      config.check_every > 0 ? config.check_every : std::max<uint64_t>(1, std::llround(updates_per_epoch / 10));

  RunState state;
  std::vector<std::unique_ptr<ThreadState>> own;
  for (size_t t = 0; t < threads; ++t) own.push_back(std::make_unique<ThreadState>(train_set, config, t));
  std::barrier round_start(static_cast<std::ptrdiff_t>(threads + 1));
  std::barrier round_end(static_cast<std::ptrdiff_t>(threads + 1));

  AsyncSgdResult result;
  Position at;
  if (resume) {
    StateReader in(resume->state, resume->source);
    const std::string algorithm = in.take_text("shm.algorithm");
    if (algorithm != config.algorithm)
      throw Error(fmt::format("{}: holds the state of strategy {}, this run's is {}", in.source(),
                              printable(algorithm, 40), config.algorithm));
    const auto saved_threads = in.take_value<uint64_t>("shm.threads");
    if (saved_threads != threads)
      throw Error(fmt::format("{}: holds {} threads' state, this run has {}", in.source(), saved_threads, threads));
    at = in.take_value<Position>("shm.position");
    shared->load_state(in);
    for (size_t t = 0; t < threads; ++t) own[t]->load_state(in, t), replicas[t]->load_state(in);
    result.checks = in.take_vector<LossCheck>("result.checks");
    result.epochs = in.take_vector<ShmEpoch>("result.epochs");
    result.train_seconds = in.take_value<double>("result.train_seconds");
    in.expect_end();
    if (at.started > total_gradients)
      throw Error(fmt::format("{}: taken after {} gradients of all threads, past this run's end at {} (a longer "
                              "run.epochs or run.max_steps?)",
                              in.source(), at.started, total_gradients));
    // The records must fit together: a crafted file could hold each well and
    // still not (an epoch far past the position would overflow its end).
    uint64_t computed = 0;
    for (const auto& o : own) computed += o->gradients;
    if (computed != at.started || at.last_check > at.started || at.epoch_start_gradients > at.started ||
        at.epoch < 1 || static_cast<double>(at.epoch - 1) * updates_per_epoch > static_cast<double>(at.started) ||
        result.checks.empty())
      throw Error(fmt::format("{}: its position (after {} gradients, the last check at {}, epoch {} from {}) does not "
                              "fit its threads' {} gradients and {} loss checks",
                              in.source(), at.started, at.last_check, at.epoch, at.epoch_start_gradients, computed,
                              result.checks.size()));
  }

  auto worker = [&](size_t t) {
    ThreadState& mine = *own[t];
    TimelineThread timeline(fmt::format("thread {}", t));
    mine.placed = config.placer.bind_current_thread("thread", static_cast<int>(t), static_cast<int>(t));
    Model& model = *replicas[t];
    std::optional<uint64_t> fresh;  // the replica already holds this version (refreshed by the last apply)
    while (true) {
      round_start.arrive_and_wait();
      if (state.done.load(std::memory_order_acquire)) break;
      try {
        for (int64_t left; !state.halt.load(std::memory_order_relaxed) &&
                           (left = state.budget.fetch_sub(1, std::memory_order_relaxed)) > 0;) {
          // This gradient's place in the run gives its epoch, and so its rate.
          const double epoch = static_cast<double>(state.round_end - static_cast<uint64_t>(left)) / updates_per_epoch;
          const auto lr_scale = static_cast<float>(config.optimizer.schedule.factor(epoch));
          const Batch& batch = mine.stream.next();
          uint64_t read_version;
          if (fresh) {
            read_version = *fresh;
          } else {
            TimelineSpan span("read");
            read_version = shared->read(model.params(), mine.backoff, mine.counters);
          }
          const float loss = model.forward_backward(batch);
          ++mine.gradients;
          mine.loss_sum += loss;
          if (!std::isfinite(loss) || loss > config.diverge_above) {
            std::lock_guard lock(state.mutex);
            if (state.diverged_why.empty())
              // The thread's own count: the shared one may be changing under another thread's lock.
              state.diverged_why =
                  fmt::format("thread {}'s batch loss was {} at its gradient {}", t, loss, mine.gradients);
            state.halt.store(true, std::memory_order_relaxed);
            break;
          }
          TimelineSpan span("apply");
          const ApplyOutcome outcome = shared->apply(model.grads(), read_version, static_cast<int>(t), mine.backoff,
                                                     mine.counters, model.params(), lr_scale);
          if (outcome.applied) mine.staleness.record(outcome.staleness);
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
  };

  auto check = [&](double seconds) {
    TimelineSpan span("loss check");
    shared->snapshot(evaluator->params());
    const LossCheck c{shared->updates(), seconds, evaluator->evaluate(loss_set).loss};
    result.checks.push_back(c);
    if (callbacks.on_check) callbacks.on_check(c);
    return c;
  };
  // Test metrics at the end of an epoch (or of the run, part way through one).
  auto end_epoch = [&] {
    if (!test_set) return;
    uint64_t gradients = 0;
    double loss_sum = 0;
    for (const auto& o : own) gradients += o->gradients, loss_sum += o->loss_sum;
    ShmEpoch e;
    e.epoch = result.epochs.size() + 1;
    e.gradients = gradients - at.epoch_start_gradients;
    e.train_loss = e.gradients > 0 ? (loss_sum - at.epoch_start_loss) / static_cast<double>(e.gradients) : 0.0;
    e.seconds = result.train_seconds - at.epoch_start_seconds;
    TimelineSpan span("evaluation", "epoch", static_cast<int64_t>(e.epoch));
    shared->snapshot(evaluator->params());
    e.test = evaluator->evaluate(*test_set);
    at.epoch_start_gradients = gradients, at.epoch_start_loss = loss_sum, at.epoch_start_seconds = result.train_seconds;
    result.epochs.push_back(e);
    if (callbacks.on_epoch) callbacks.on_epoch(e);
  };

  // Checkpoints: where a round must end for one (none for a cadence in
  // seconds, which is looked at on loss checks), and whether one is due.
  const bool checkpointing = static_cast<bool>(callbacks.on_checkpoint);
  const bool at_epoch_ends = config.checkpoint_every == 0 && config.checkpoint_every_s == 0;
  auto next_checkpoint = [&](uint64_t g) -> uint64_t {
    if (config.checkpoint_every > 0) return (g / config.checkpoint_every + 1) * config.checkpoint_every;
    if (at_epoch_ends) return std::min(next_epoch_end(g), total_gradients);
    return total_gradients;
  };
  Stopwatch since_checkpoint;
  auto checkpoint_due = [&](uint64_t g, bool checked) {
    if (config.checkpoint_every > 0) return g % config.checkpoint_every == 0;
    if (at_epoch_ends) return g == total_gradients || next_epoch_end(g - 1) == g;
    return checked && since_checkpoint.seconds() >= config.checkpoint_every_s;
  };
  auto write_checkpoint = [&] {
    TimelineSpan span("checkpoint", "gradients", static_cast<int64_t>(at.started));
    StateWriter w;
    w.put_text("shm.algorithm", config.algorithm);
    w.put_value("shm.threads", static_cast<uint64_t>(threads));
    w.put_value("shm.position", at);
    shared->save_state(w);
    for (size_t t = 0; t < threads; ++t) own[t]->save_state(w, t), replicas[t]->save_state(w);
    w.put("result.checks", result.checks);
    w.put("result.epochs", result.epochs);
    w.put_value("result.train_seconds", result.train_seconds);
    callbacks.on_checkpoint(at.started, w.take());
    since_checkpoint.reset();
  };

  TimelineThread timeline("loss checks");  // this thread's part: checks, evaluations, checkpoints
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
    if (!resume) check(0);
    while (true) {
      if (at.started >= total_gradients) {
        result.stopped_by = config.max_gradients > 0 && total_gradients == config.max_gradients &&
                                    total_gradients < epoch_end(static_cast<uint64_t>(std::ceil(config.epochs)))
                                ? "max steps"
                                : "epochs";
        break;
      }
      // A round ends at the next loss check, and with a test set where an
      // epoch does (for the epoch's evaluation), or at a checkpoint.
      uint64_t check_at = std::min(at.last_check + check_every, total_gradients);
      if (test_set) check_at = std::min(check_at, epoch_end(at.epoch));
      const uint64_t until = checkpointing ? std::min(check_at, next_checkpoint(at.started)) : check_at;
      state.budget.store(static_cast<int64_t>(until - at.started), std::memory_order_relaxed);
      state.round_end = until;
      Stopwatch clock;
      round_start.arrive_and_wait();
      round_end.arrive_and_wait();
      result.train_seconds += clock.seconds();
      at.started = until;
      if (state.error) break;
      // A thread that diverged ended the round early: check where the shared model is.
      const bool checked = until == check_at || !state.diverged_why.empty();
      std::optional<LossCheck> c;
      if (checked) {
        c = check(result.train_seconds);
        at.last_check = at.started;
        if (at.started == epoch_end(at.epoch)) {
          end_epoch();
          ++at.epoch;
        }
      }
      if (!state.diverged_why.empty()) {
        result.diverged_why = state.diverged_why;
      } else if (c && (!std::isfinite(c->loss) || c->loss > config.diverge_above)) {
        result.diverged_why = fmt::format("training loss {} at {} updates", c->loss, c->updates);
      }
      if (!result.diverged_why.empty()) {
        result.diverged = true;
        result.stopped_by = "diverged";
        break;  // no checkpoint of a diverged state
      }
      if (checkpointing && checkpoint_due(at.started, checked)) write_checkpoint();
      if (!c) continue;
      if (config.target_loss > 0 && c->loss <= config.target_loss) {
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
  for (const auto& o : own) computed += o->gradients;
  if (!state.error && (result.epochs.empty() || computed > at.epoch_start_gradients)) end_epoch();
  if (state.error) {
    try {
      std::rethrow_exception(state.error);
    } catch (const std::exception& e) {
      // The run's failure, not the input's: a restart from the last checkpoint may get past it.
      throw InterruptedError(fmt::format("shared-memory thread {} failed: {}", state.error_thread, e.what()));
    }
  }
  std::vector<PlacedThread> placed;
  for (const auto& o : own) {
    result.totals.applied += o->counters.applied;
    result.totals.dropped += o->counters.dropped;
    result.totals.failed_swaps += o->counters.failed_swaps;
    result.totals.contended_locks += o->counters.contended_locks;
    result.staleness.merge(o->staleness);
    result.gradients += o->gradients;
    result.thread_gradients.push_back(o->gradients);
    result.backoff_waits += o->backoff.waits();
    result.backoff_us += o->backoff.waited_us();
    result.cpus.push_back(o->placed.bound ? o->placed.place.cpu : -1);
    placed.push_back(o->placed);
  }
  result.placement = config.placer.record(std::move(placed));
  result.placement.shared_nodes = config.placer.shared_nodes(config.threads);
  result.notes = shared->notes(result.totals);
  result.final_loss = result.checks.back().loss;
  result.final_params.resize(initial.size());
  shared->snapshot(result.final_params);
  result.wall_seconds = wall.seconds();
  return result;
}

}  // namespace ptrain
