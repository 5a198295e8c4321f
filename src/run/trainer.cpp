#include "run/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "comm/hierarchical_communicator.hpp"
#include "comm/local_group.hpp"
#include "core/error.hpp"
#include "core/run_failure.hpp"
#include "core/stopwatch.hpp"
#include "run/run_shape.hpp"
#include "run/worker_loop.hpp"

namespace ptrain {

namespace {

// The first failure of a run: later ones are usually the others being woken.
// `training`: it came after the workers began (a retry from a checkpoint may
// get past it), not while they set up (the input is wrong).
class FirstError {
 public:
  void record(const std::string& message, bool training) {
    std::lock_guard lock(mutex_);
    if (!message_.empty()) return;
    message_ = message;
    training_ = training;
  }
  bool any() const { return !message_.empty(); }
  void throw_if_any() const {
    if (message_.empty()) return;
    if (training_) throw InterruptedError(message_);
    throw Error(message_);
  }

 private:
  std::mutex mutex_;
  std::string message_;
  bool training_ = false;
};

void validate(const TrainConfig& c, const Dataset& train_set) {
  if (c.workers < 1) throw Error(fmt::format("run.workers must be at least 1 (got {})", c.workers));
  if (c.batch < 1) throw Error("run.batch must be at least 1");
  if (!(c.epochs > 0) && c.max_steps == 0) throw Error("run.epochs must be > 0 (or run.max_steps set)");
  if (!c.make_strategy) throw Error("train: no strategy given");
  if (train_set.size() == 0) throw Error("training set '" + train_set.name() + "' is empty");
  if (c.microbatches < 1 || c.microbatches > c.batch)
    throw Error(fmt::format("run.microbatches: {} micro-batches of a batch of {} (1 to the batch)", c.microbatches,
                            c.batch));
  if (c.microbatches > 1 && train_set.stream())
    throw Error(fmt::format("run.microbatches: {} is a token stream, whose rows carry the model's state from one "
                            "batch to the next; micro-batches would restart it (use 1)",
                            train_set.name()));
  // The batch against the shard is checked by ShardedSampler, which run_shape()
  // builds before any replica exists.
}

// One worker's whole run (run/worker_loop.hpp).
void run_worker(const TrainConfig& config, const RunShape& shape, const Dataset& train_set,
                const Dataset* test_set, Model& replica, StrategyGroup& strategy, Communicator& comm,
                Communicator* with_servers, const TrainCallbacks& callbacks, RunResult& result, bool& began) {
  WorkerLoop(config, shape, train_set, test_set, replica, strategy, comm, with_servers, callbacks, result).run(began);
}

void finish(const TrainConfig& config, RunResult& result) {
  for (size_t s = 0; s < result.step_losses.size(); ++s)
    if ((s + 1) % std::max<size_t>(config.log_every, 1) == 0 || s + 1 == result.step_losses.size())
      result.loss_curve.push_back({s + 1, result.step_losses[s]});
  result.samples_per_s =
      result.train_seconds > 0 ? static_cast<double>(result.samples) / result.train_seconds : 0;
}

StrategyConfig strategy_config(const TrainConfig& config, const RunShape& shape) {
  StrategyConfig c = config.strategy;
  c.timeout = config.comm_timeout;
  c.steps_per_epoch = shape.steps_per_epoch;
  c.total_steps = shape.total_steps;
  c.microbatches = config.microbatches;
  c.time_limit_seconds = config.time_limit_s;
  c.memory_limit = config.memory_limit;
  return c;
}

// Worker `first + i`'s replica for each thread i, each built under its
// thread's memory policy, so that its pages are first touched on its node.
std::vector<std::unique_ptr<Model>> placed_replicas(const Placer& placer, int count, int first,
                                                    const ModelFactory& make_replica) {
  std::vector<std::unique_ptr<Model>> replicas;
  for (int i = 0; i < count; ++i) {
    const AllocationPolicy near = placer.allocations_near(i);
    replicas.push_back(make_replica(first + i));
  }
  return replicas;
}

// A thread of its own for `body(began)`; a failure is recorded in
// `first_error` (a training failure once `began` is set) and `stop` wakes the
// others, so that none waits on it until a timeout.
template <class Body, class Stop>
std::thread guarded_thread(FirstError& first_error, Body body, Stop stop) {
  return std::thread([&first_error, body, stop] {
    bool began = false;
    try {
      body(began);
    } catch (const std::exception& e) {
      first_error.record(e.what(), began || dynamic_cast<const InterruptedError*>(&e));
      stop();
    }
  });
}

}  // namespace

RunResult train(const TrainConfig& config, const Dataset& train_set, const Dataset* test_set,
                const ModelFactory& make_replica, const TrainCallbacks& callbacks) {
  validate(config, train_set);
  Stopwatch wall;
  const int workers = config.workers;
  const RunShape shape = run_shape(config, train_set);
  std::vector<std::unique_ptr<Model>> replicas = placed_replicas(config.placer, workers, 0, make_replica);
  auto strategy = config.make_strategy(strategy_config(config, shape), replicas[0]->params().size(), workers);
  const int servers = strategy->servers();
  std::vector<PlacedThread> placed(static_cast<size_t>(workers + servers));
  auto group = std::make_shared<LocalGroup>(workers, config.comm_timeout);
  // With parameter servers, the shards are threads W..W+S-1 of a second group.
  auto with_servers = servers > 0 ? std::make_shared<LocalGroup>(workers + servers, config.comm_timeout) : nullptr;
  RunResult result;
  FirstError first_error;
  auto stop_everyone = [&](const std::string& reason) {
    group->abort(reason);
    if (with_servers) with_servers->abort(reason);
    strategy->abort(reason);
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r)
    threads.push_back(guarded_thread(
        first_error,
        [&, r](bool& began) {
          placed[static_cast<size_t>(r)] = config.placer.bind_current_thread("worker", r, r);
          LocalCommunicator comm(group, r);
          std::unique_ptr<LocalCommunicator> to_servers;
          if (with_servers) to_servers = std::make_unique<LocalCommunicator>(with_servers, r);
          run_worker(config, shape, train_set, test_set, *replicas[static_cast<size_t>(r)], *strategy, comm,
                     to_servers.get(), callbacks, result, began);
        },
        [&, r] { stop_everyone(fmt::format("stopped because worker {} failed", r)); }));
  for (int s = 0; s < servers; ++s)
    threads.push_back(guarded_thread(
        first_error,
        [&, s](bool& began) {
          began = true;  // a shard fails only once workers talk to it
          placed[static_cast<size_t>(workers + s)] = config.placer.bind_current_thread("shard", s, workers + s);
          LocalCommunicator comm(with_servers, workers + s);
          strategy->serve(comm, s, replicas[0]->layout());
        },
        [&, s] { stop_everyone(fmt::format("stopped because server shard {} failed", s)); }));
  for (auto& t : threads) t.join();
  // Every writer is done: what a failed run wrote of a checkpoint it never committed goes.
  if (first_error.any() && !config.checkpoint.dir.empty()) {
    try {
      CheckpointStore(config.checkpoint.dir, config.checkpoint.keep).remove_leftovers();
    } catch (const std::exception&) {  // best effort: the run's own error says more
    }
  }
  first_error.throw_if_any();
  finish(config, result);
  result.placement = config.placer.record(std::move(placed));
  result.wall_seconds = wall.seconds();
  return result;
}

namespace {

RunResult train_with(Communicator& comm, Communicator* with_servers, const TrainConfig& config,
                     const Dataset& train_set, const Dataset* test_set, const ModelFactory& make_replica,
                     const TrainCallbacks& callbacks) {
  if (config.workers != comm.size())
    throw Error(fmt::format("train: {} workers configured but the {} backend has {}", config.workers,
                            comm.backend(), comm.size()));
  validate(config, train_set);
  Stopwatch wall;
  const RunShape shape = run_shape(config, train_set);
  auto model = make_replica(comm.rank());
  auto strategy = config.make_strategy(strategy_config(config, shape), model->params().size(), comm.size());
  if (strategy->servers() > 0 && !with_servers)
    throw Error("train: this strategy needs server shards besides the workers");
  if (with_servers && with_servers->size() != comm.size() + strategy->servers())
    throw Error(fmt::format("train: {} workers and {} server shards need {} ranks, not {}", comm.size(),
                            strategy->servers(), comm.size() + strategy->servers(), with_servers->size()));
  RunResult result;
  bool began = false;
  try {
    run_worker(config, shape, train_set, test_set, *model, *strategy, comm, with_servers, callbacks, result, began);
  } catch (const InterruptedError&) {
    throw;
  } catch (const Error& e) {
    if (began) throw InterruptedError(e.what());
    throw;
  }
  finish(config, result);
  result.wall_seconds = wall.seconds();
  return result;
}

}  // namespace

RunResult train_on_threads(std::span<Communicator* const> across, std::span<Communicator* const> mesh,
                           const TrainConfig& config, const Dataset& train_set, const Dataset* test_set,
                           const ModelFactory& make_replica, const TrainCallbacks& callbacks) {
  if (across.empty() || mesh.size() != across.size())
    throw Error(fmt::format("train: {} threads' communicators across the ranks but {} on the mesh", across.size(),
                            mesh.size()));
  const int threads = static_cast<int>(across.size()), rank = across[0]->rank();
  if (config.workers != across[0]->size() * threads)
    throw Error(fmt::format("train: {} workers configured but {} ranks x {} threads make {}", config.workers,
                            across[0]->size(), threads, across[0]->size() * threads));
  validate(config, train_set);
  Stopwatch wall;
  const RunShape shape = run_shape(config, train_set);
  std::vector<std::unique_ptr<Model>> replicas = placed_replicas(config.placer, threads, rank * threads, make_replica);
  auto strategy = config.make_strategy(strategy_config(config, shape), replicas[0]->params().size(), config.workers);
  std::vector<PlacedThread> placed(static_cast<size_t>(threads));
  if (strategy->servers() > 0) throw Error("train: worker threads in MPI ranks run with no parameter-server shards");
  auto group = std::make_shared<LocalGroup>(threads, config.comm_timeout, rank * threads);
  RunResult result;
  FirstError first_error;
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.push_back(guarded_thread(
        first_error,
        [&, t](bool& began) {
          placed[static_cast<size_t>(t)] = config.placer.bind_current_thread("worker", rank * threads + t, t);
          HierarchicalCommunicator comm(group, t, *across[static_cast<size_t>(t)], *mesh[static_cast<size_t>(t)]);
          run_worker(config, shape, train_set, test_set, *replicas[static_cast<size_t>(t)], *strategy, comm, nullptr,
                     callbacks, result, began);
        },
        [&, t] {
          // The siblings may be waiting on other ranks, which wait on them.
          const std::string reason = fmt::format("stopped because worker {} failed", rank * threads + t);
          group->abort(reason);
          for (Communicator* c : across) c->interrupt(reason);
          for (Communicator* c : mesh) c->interrupt(reason);
          strategy->abort(reason);
        }));
  for (auto& t : running) t.join();
  first_error.throw_if_any();
  finish(config, result);
  result.placement = config.placer.record(std::move(placed));
  result.wall_seconds = wall.seconds();
  return result;
}

RunResult train_on(Communicator& comm, const TrainConfig& config, const Dataset& train_set,
                   const Dataset* test_set, const ModelFactory& make_replica,
                   const TrainCallbacks& callbacks) {
  return train_with(comm, nullptr, config, train_set, test_set, make_replica, callbacks);
}

RunResult train_on(Communicator& workers, Communicator& with_servers, const TrainConfig& config,
                   const Dataset& train_set, const Dataset* test_set, const ModelFactory& make_replica,
                   const TrainCallbacks& callbacks) {
  return train_with(workers, &with_servers, config, train_set, test_set, make_replica, callbacks);
}

void serve_on(Communicator& with_servers, const TrainConfig& config, const Dataset& train_set,
              const ModelFactory& make_replica) {
  validate(config, train_set);
  const RunShape shape = run_shape(config, train_set);
  auto model = make_replica(kLayoutOnly);  // for the layout of the flat buffer, which the codecs need
  auto strategy = config.make_strategy(strategy_config(config, shape), model->params().size(), config.workers);
  if (with_servers.size() != config.workers + strategy->servers())
    throw Error(fmt::format("train: {} workers and {} server shards need {} ranks, not {}", config.workers,
                            strategy->servers(), config.workers + strategy->servers(), with_servers.size()));
  try {
    strategy->serve(with_servers, with_servers.rank() - config.workers, model->layout());
  } catch (const InterruptedError&) {
    throw;
  } catch (const Error& e) {
    throw InterruptedError(e.what());  // a shard fails only once workers talk to it
  }
}

}  // namespace ptrain
