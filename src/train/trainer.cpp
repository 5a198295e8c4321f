#include "train/trainer.hpp"

#include <fmt/format.h>

#include <cmath>
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
  const size_t shard = shard_size(train_set.size(), c.workers);
  if (c.batch > shard)
    throw Error(
        fmt::format("--batch {} is larger than each worker's shard of {} samples ({} samples, {} workers)",
                    c.batch, shard, train_set.size(), c.workers));
}

}  // namespace

size_t shard_size(size_t n, int workers) { return workers > 0 ? n / static_cast<size_t>(workers) : 0; }

RunResult train(const TrainConfig& config, const Dataset& train_set, const Dataset* test_set,
                const ModelFactory& make_replica, const TrainCallbacks& callbacks) {
  validate(config, train_set);
  Stopwatch wall;
  const int workers = config.workers;
  const uint64_t data_seed = derive_seed(config.seed, kDataOrderStream);
  const size_t steps_per_epoch =
      ShardedSampler(train_set.size(), static_cast<size_t>(workers), 0, config.batch, data_seed)
          .batches_per_epoch();
  size_t total_steps = steps_per_epoch * config.epochs;
  if (config.max_steps > 0 && (config.epochs == 0 || config.max_steps < total_steps))
    total_steps = config.max_steps;
  const size_t epochs = (total_steps + steps_per_epoch - 1) / steps_per_epoch;

  std::vector<std::unique_ptr<Model>> replicas;
  for (int r = 0; r < workers; ++r) replicas.push_back(make_replica());
  const size_t num_params = replicas[0]->params().size();
  auto group = std::make_shared<LocalGroup>(workers, config.comm_timeout);
  StrategyConfig strategy_config = config.strategy;
  strategy_config.timeout = config.comm_timeout;
  auto strategy = make_strategy_group(strategy_config, num_params, workers);

  // losses[r][s]: worker r's batch loss at step s. Each worker writes its own row;
  // worker 0 reads the others only after a barrier.
  std::vector<std::vector<float>> losses(static_cast<size_t>(workers), std::vector<float>(total_steps));
  std::vector<CommStats> comm_stats(static_cast<size_t>(workers));
  RunResult result;
  FirstError first_error;

  auto run_worker = [&](int rank) {
    if (config.pin_workers) pin_current_thread(rank);
    LocalCommunicator comm(group, rank);
    Model& model = *replicas[static_cast<size_t>(rank)];
    auto side = strategy->for_worker(model, comm);
    ShardedSampler sampler(train_set.size(), static_cast<size_t>(workers), static_cast<size_t>(rank),
                           config.batch, data_seed);
    Batch batch;
    auto& my_losses = losses[static_cast<size_t>(rank)];
    side->start();
    size_t step = 0;
    for (size_t epoch = 0; epoch < epochs; ++epoch) {
      sampler.start_epoch(epoch);
      const size_t epoch_first_step = step;
      const size_t epoch_steps = std::min(steps_per_epoch, total_steps - step);
      comm.barrier();
      Stopwatch epoch_clock;
      double running = 0;
      for (size_t b = 0; b < epoch_steps; ++b, ++step) {
        batch.gather(train_set, sampler.batch(b));
        const float loss = side->step(batch);
        if (!std::isfinite(loss))
          throw Error(fmt::format("worker {}: the loss became {} at step {} (diverged; try a lower --lr)",
                                  rank, loss, step + 1));
        my_losses[step] = loss;
        running += loss;
        if (rank == 0 && callbacks.on_progress && ((b + 1) % 5 == 0 || b + 1 == epoch_steps)) {
          const double t = epoch_clock.seconds();
          callbacks.on_progress(Progress{
              epoch + 1, epochs, b + 1, epoch_steps, running / static_cast<double>(b + 1),
              t > 0 ? static_cast<double>((b + 1) * config.batch * static_cast<size_t>(workers)) / t : 0});
        }
      }
      comm.barrier();
      if (rank == 0) {
        EpochMetrics m;
        m.epoch = epoch + 1;
        m.steps = epoch_steps;
        m.seconds = epoch_clock.seconds();
        m.samples_per_s =
            static_cast<double>(epoch_steps * config.batch * static_cast<size_t>(workers)) / m.seconds;
        double sum = 0;
        for (const auto& row : losses)
          for (size_t s = epoch_first_step; s < step; ++s) sum += row[s];
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
    if (rank == 0) {
      side->sync_for_evaluation();
      auto p = model.params();
      result.final_params.assign(p.begin(), p.end());
    }
    comm_stats[static_cast<size_t>(rank)] = comm.stats();
  };

  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r)
    threads.emplace_back([&, r] {
      try {
        run_worker(r);
      } catch (const std::exception& e) {
        first_error.record(e.what());
        const std::string reason = fmt::format("stopped because worker {} failed", r);
        group->abort(reason);
        strategy->abort(reason);
      }
    });
  for (auto& t : threads) t.join();
  if (!first_error.message().empty()) throw Error(first_error.message());

  result.steps = total_steps;
  result.samples = total_steps * config.batch * static_cast<size_t>(workers);
  result.comm = comm_stats;
  result.step_losses.resize(total_steps);
  for (size_t s = 0; s < total_steps; ++s) {
    double sum = 0;
    for (const auto& row : losses) sum += row[s];
    result.step_losses[s] = static_cast<float>(sum / workers);
    if ((s + 1) % std::max<size_t>(config.log_every, 1) == 0 || s + 1 == total_steps)
      result.loss_curve.push_back({s + 1, result.step_losses[s]});
  }
  result.samples_per_s =
      result.train_seconds > 0 ? static_cast<double>(result.samples) / result.train_seconds : 0;
  result.wall_seconds = wall.seconds();
  return result;
}

}  // namespace ptrain
