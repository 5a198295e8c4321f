#include "train/trainer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>

#include "comm/local_group.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/stopwatch.hpp"
#include "core/thread_affinity.hpp"
#include "data/sharded_sampler.hpp"

namespace ptrain {

namespace {

constexpr uint64_t kDataOrderStream = 1;

// The first failure of a run: later ones are usually the others being woken.
class FirstError {
 public:
  void record(const std::string& message) {
    std::lock_guard lock(mutex_);
    if (message_.empty()) message_ = message;
  }
  const std::string& message() const { return message_; }

 private:
  std::mutex mutex_;
  std::string message_;
};

void validate(const TrainConfig& c, const Dataset& train_set) {
  if (c.workers < 1) throw Error(fmt::format("--workers must be at least 1 (got {})", c.workers));
  if (c.batch < 1) throw Error("--batch must be at least 1");
  if (c.epochs < 1 && c.max_steps == 0) throw Error("--epochs must be at least 1");
  if (train_set.size() == 0) throw Error("training set '" + train_set.name() + "' is empty");
  // The batch against the shard is checked by ShardedSampler, which run_shape()
  // builds before any replica exists.
}

}  // namespace

namespace {

// The length of a run, the same on every worker.
struct RunShape {
  uint64_t data_seed;
  size_t steps_per_epoch, total_steps, epochs;
};

RunShape run_shape(const TrainConfig& config, const Dataset& train_set) {
  RunShape shape;
  shape.data_seed = derive_seed(config.seed, kDataOrderStream);
  shape.steps_per_epoch =
      ShardedSampler(train_set.size(), static_cast<size_t>(config.workers), 0, config.batch, shape.data_seed)
          .batches_per_epoch();
  shape.total_steps = shape.steps_per_epoch * config.epochs;
  if (config.max_steps > 0 && (config.epochs == 0 || config.max_steps < shape.total_steps))
    shape.total_steps = config.max_steps;
  shape.epochs = (shape.total_steps + shape.steps_per_epoch - 1) / shape.steps_per_epoch;
  return shape;
}

// One worker's whole run on `comm`, whatever the backend. Worker 0 evaluates,
// reports progress and fills `result`.
void run_worker(const TrainConfig& config, const RunShape& shape, const Dataset& train_set,
                const Dataset* test_set, Model& model, StrategyGroup& strategy, Communicator& comm,
                const TrainCallbacks& callbacks, RunResult& result) {
  const int rank = comm.rank(), workers = comm.size();
  auto side = strategy.for_worker(model, comm);
  ShardedSampler sampler(train_set.size(), static_cast<size_t>(workers), static_cast<size_t>(rank),
                         config.batch, shape.data_seed);
  Batch batch;
  side->start();
  size_t step = 0;
  for (size_t epoch = 0; epoch < shape.epochs; ++epoch) {
    sampler.start_epoch(epoch);
    const size_t epoch_steps = std::min(shape.steps_per_epoch, shape.total_steps - step);
    std::vector<float> losses(epoch_steps);
    comm.barrier();
    Stopwatch epoch_clock;
    double running = 0;
    for (size_t b = 0; b < epoch_steps; ++b, ++step) {
      batch.gather(train_set, sampler.batch(b));
      const StepInfo info{step, static_cast<double>(step) / static_cast<double>(shape.steps_per_epoch), workers};
      const float loss = side->step(batch, info);
      if (!std::isfinite(loss))
        throw Error(fmt::format("worker {}: the loss became {} at step {} (diverged; try a lower --lr)", rank,
                                loss, step + 1));
      losses[b] = loss;
      running += loss;
      if (rank == 0 && callbacks.on_progress && ((b + 1) % 5 == 0 || b + 1 == epoch_steps)) {
        const double t = epoch_clock.seconds();
        callbacks.on_progress(Progress{
            epoch + 1, shape.epochs, b + 1, epoch_steps, running / static_cast<double>(b + 1),
            t > 0 ? static_cast<double>((b + 1) * config.batch * static_cast<size_t>(workers)) / t : 0});
      }
    }
    comm.barrier();
    const double seconds = epoch_clock.seconds();
    comm.allreduce(losses);  // every step's loss, summed over the workers
    if (rank == 0) {
      EpochMetrics m;
      m.epoch = epoch + 1;
      m.steps = epoch_steps;
      m.seconds = seconds;
      m.samples_per_s =
          static_cast<double>(epoch_steps * config.batch * static_cast<size_t>(workers)) / seconds;
      double sum = 0;
      for (float l : losses) {
        sum += l;
        result.step_losses.push_back(l / static_cast<float>(workers));
      }
      m.train_loss = sum / static_cast<double>(epoch_steps * static_cast<size_t>(workers));
      result.train_seconds += m.seconds;
      side->sync_for_evaluation();
      if (test_set) {
        const Metrics test = model.evaluate(*test_set);
        m.test_loss = test.loss;
        m.test_accuracy = test.accuracy;
      }
      result.epochs.push_back(m);
      if (callbacks.on_epoch_end) callbacks.on_epoch_end(m);
    }
    comm.barrier();  // the others wait while worker 0 evaluates
  }
  // Every worker's byte counters, to worker 0.
  const CommStats mine = comm.stats();
  const auto all = comm.allgatherv(std::as_bytes(std::span<const CommStats>(&mine, 1)));
  const CodecStats my_codec = side->codec_stats();
  const auto all_codec = comm.allgatherv(std::as_bytes(std::span<const CodecStats>(&my_codec, 1)));
  if (rank != 0) return;
  for (const auto& bytes : all_codec) {
    CodecStats s;
    std::memcpy(&s, bytes.data(), sizeof s);
    result.codec.push_back(s);
  }
  side->sync_for_evaluation();
  auto p = model.params();
  result.final_params.assign(p.begin(), p.end());
  for (const auto& bytes : all) {
    CommStats s;
    std::memcpy(&s, bytes.data(), sizeof s);
    result.comm.push_back(s);
  }
}

void finish(const TrainConfig& config, const RunShape& shape, RunResult& result) {
  result.steps = shape.total_steps;
  result.samples = shape.total_steps * config.batch * static_cast<size_t>(config.workers);
  for (size_t s = 0; s < result.step_losses.size(); ++s)
    if ((s + 1) % std::max<size_t>(config.log_every, 1) == 0 || s + 1 == result.step_losses.size())
      result.loss_curve.push_back({s + 1, result.step_losses[s]});
  result.samples_per_s =
      result.train_seconds > 0 ? static_cast<double>(result.samples) / result.train_seconds : 0;
}

StrategyConfig strategy_config(const TrainConfig& config) {
  StrategyConfig c = config.strategy;
  c.timeout = config.comm_timeout;
  return c;
}

}  // namespace

RunResult train(const TrainConfig& config, const Dataset& train_set, const Dataset* test_set,
                const ModelFactory& make_replica, const TrainCallbacks& callbacks) {
  validate(config, train_set);
  Stopwatch wall;
  const int workers = config.workers;
  const RunShape shape = run_shape(config, train_set);
  std::vector<std::unique_ptr<Model>> replicas;
  for (int r = 0; r < workers; ++r) replicas.push_back(make_replica());
  auto group = std::make_shared<LocalGroup>(workers, config.comm_timeout);
  auto strategy = make_strategy_group(strategy_config(config), replicas[0]->params().size(), workers);
  RunResult result;
  FirstError first_error;
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r)
    threads.emplace_back([&, r] {
      try {
        if (config.pin_workers) pin_current_thread(r);
        LocalCommunicator comm(group, r);
        run_worker(config, shape, train_set, test_set, *replicas[static_cast<size_t>(r)], *strategy, comm,
                   callbacks, result);
      } catch (const std::exception& e) {
        first_error.record(e.what());
        const std::string reason = fmt::format("stopped because worker {} failed", r);
        group->abort(reason);
        strategy->abort(reason);
      }
    });
  for (auto& t : threads) t.join();
  if (!first_error.message().empty()) throw Error(first_error.message());
  finish(config, shape, result);
  result.wall_seconds = wall.seconds();
  return result;
}

RunResult train_on(Communicator& comm, const TrainConfig& config, const Dataset& train_set,
                   const Dataset* test_set, const ModelFactory& make_replica,
                   const TrainCallbacks& callbacks) {
  if (config.workers != comm.size())
    throw Error(fmt::format("train: {} workers configured but the {} backend has {}", config.workers,
                            comm.backend(), comm.size()));
  validate(config, train_set);
  Stopwatch wall;
  const RunShape shape = run_shape(config, train_set);
  auto model = make_replica();
  auto strategy = make_strategy_group(strategy_config(config), model->params().size(), comm.size());
  RunResult result;
  run_worker(config, shape, train_set, test_set, *model, *strategy, comm, callbacks, result);
  finish(config, shape, result);
  result.wall_seconds = wall.seconds();
  return result;
}

}  // namespace ptrain
