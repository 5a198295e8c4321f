#include "sync/parameter_server_strategy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "ps/shard_server.hpp"
#include "sync/bounded_staleness_coordinator.hpp"
#include "sync/synchronous_coordinator.hpp"

namespace ptrain {

void SspOptions::check(int, const std::string& prefix, Problems& problems) const {
  try {
    parse_stale_policy(stale_policy);
  } catch (const Error&) {
    problems.add(prefix + "stale_policy", std::string(kStalePolicyExpected) + ", got '" + stale_policy + "'");
  }
}

void AsyncOptions::check(int workers, const std::string& prefix, Problems& problems) const {
  SspOptions ssp;
  ssp.stale_policy = stale_policy;
  ssp.check(workers, prefix, problems);
}

ServerMode SspOptions::mode() const {
  ServerMode m = ServerMode::of(name, servers);
  m.aggregated = false;
  m.staleness_bound = staleness;
  m.stale_policy = parse_stale_policy(stale_policy);
  m.warmup_single = warmup_single;
  return m;
}

ServerMode AsyncOptions::mode() const {
  ServerMode m = ServerMode::of(name, servers);
  m.aggregated = false;
  m.workers_may_leave = true;
  m.stale_policy = parse_stale_policy(stale_policy);
  m.warmup_single = warmup_single;
  m.lr_divide = async_lr_divide;
  return m;
}

std::unique_ptr<StrategyGroup> make_parameter_server_group(const ServerMode& mode, const StrategyConfig& config,
                                                           size_t num_params, int workers) {
  return std::make_unique<ParameterServerGroup>(mode, config, num_params, workers);
}

ParameterServerGroup::ParameterServerGroup(ServerMode mode, StrategyConfig config, size_t num_params, int workers)
    : mode_(std::move(mode)), config_(std::move(config)), workers_(workers) {
  if (mode_.servers < 1) throw Error(fmt::format("{}: needs at least one server shard (got {})", mode_.name, mode_.servers));
  if (mode_.backup < 0 || mode_.backup >= workers)
    throw Error(fmt::format("{}: backup {} needs 0 <= b < W = {}", mode_.name, mode_.backup, workers));
  if (config_.steps_per_epoch == 0 || config_.total_steps == 0) throw Error(mode_.name + ": the run has no steps");
  ranges_ = shard_ranges(num_params, mode_.servers);
  if (mode_.lr_divide) config_.optimizer.lr /= static_cast<float>(workers);
}

std::unique_ptr<WorkerStrategy> ParameterServerGroup::for_worker(Model&, Communicator&) {
  throw Error(mode_.name + ": needs server shards besides the workers (a communicator that joins them)");
}

std::unique_ptr<WorkerStrategy> ParameterServerGroup::for_worker_with_servers(Model& model, Communicator&,
                                                                              Communicator& with_servers) {
  return std::make_unique<ParameterServerWorker>(*this, model, with_servers);
}

void ParameterServerGroup::serve(Communicator& with_servers, int shard, const FlatLayout& layout) {
  const ShardRange range = ranges_.at(static_cast<size_t>(shard));
  ShardConfig c;
  c.strategy = mode_.name;
  c.shard = shard;
  c.workers = workers_;
  c.range = range;
  c.optimizer = config_.optimizer;
  c.codec = config_.codec;
  c.codec_range = codec_range(layout, range.begin, range.end);
  c.pull = config_.pull;
  c.aggregated = mode_.aggregated;
  c.gradients_per_update = static_cast<size_t>(workers_ - mode_.backup);
  c.staleness_rule = staleness_rule(mode_.stale_policy);
  c.timeout = config_.timeout;
  std::unique_ptr<StepCoordinator> coordinator;
  if (shard == 0) {
    if (mode_.aggregated)
      coordinator = std::make_unique<SynchronousCoordinator>(workers_, mode_.backup, config_.steps_per_epoch,
                                                             config_.total_steps, config_.time_limit_seconds);
    else
      coordinator = std::make_unique<BoundedStalenessCoordinator>(workers_, config_.steps_per_epoch,
                                                                  config_.total_steps, mode_.staleness_bound,
                                                                  mode_.warmup_single, config_.time_limit_seconds,
                                                                  mode_.stale_policy);
  }
  with_servers.set_waiting(Communicator::Waiting::Nap);  // a shard mostly waits for its workers
  ShardServer(with_servers, std::move(c), std::move(coordinator)).serve();
}

ParameterServerWorker::ParameterServerWorker(const ParameterServerGroup& group, Model& model,
                                             Communicator& with_servers)
    : group_(group),
      model_(model),
      client_(with_servers, group.workers_, group.ranges_, group.config_.codec, group.config_.pull, model.layout(),
              group.mode_.name, 2 * group.config_.timeout) {
  with_servers.set_waiting(Communicator::Waiting::Nap);  // a worker mostly waits for its shards
}

void ParameterServerWorker::start() {
  // The shards start from worker 0's weights, as the all-reduce replicas do.
  if (client_.worker() != 0) return;
  if (shard_states_.empty())
    client_.init(model_.params());
  else
    client_.restore(shard_states_);
  shard_states_.clear();
}

void ParameterServerWorker::save_state(StateWriter& out) {
  out.put_value("ps.min_version", min_version_);
  out.put_value("ps.epoch_received", epoch_received_);
  client_.save_codecs(out);
  if (client_.worker() != 0) return;
  // At an epoch's end the shards hold it once every push of the epoch is in;
  // inside an epoch (ps-sync, in lockstep) once the update of this step is made.
  const auto states = between_epochs_ ? client_.save(0, epoch_received_) : client_.save(min_version_ + 1, 0);
  for (size_t s = 0; s < states.size(); ++s) out.put_bytes(fmt::format("ps.shard.{}", s), states[s]);
}

void ParameterServerWorker::load_state(StateReader& in) {
  min_version_ = in.take_value<uint64_t>("ps.min_version");
  epoch_received_ = in.take_value<uint64_t>("ps.epoch_received");
  client_.load_codecs(in);
  if (client_.worker() != 0) return;
  shard_states_.clear();
  for (size_t s = 0; s < client_.shards(); ++s) shard_states_.push_back(in.take_vector<std::byte>(fmt::format("ps.shard.{}", s)));
}

bool ParameterServerWorker::next_step(size_t, size_t) {
  const PsDecision decision = client_.begin();
  between_epochs_ = decision.go == 0;
  if (!decision.go) {
    epoch_received_ = decision.received;
    run_over_ = decision.over != 0;
    return false;
  }
  min_version_ = decision.version;
  step_batches_ = static_cast<size_t>(decision.batches);
  holding_ticket_ = true;
  return true;
}

void ParameterServerWorker::pull_same_version(uint64_t min_version) {
  for (;;) {
    client_.pull(model_.params(), min_version, 0);
    uint64_t lo = client_.pulled_version(0), hi = lo;
    for (size_t s = 1; s < group_.ranges_.size(); ++s) {
      lo = std::min(lo, client_.pulled_version(s));
      hi = std::max(hi, client_.pulled_version(s));
    }
    if (lo == hi) return;
    min_version = hi;  // a shard was ahead: take its version everywhere
  }
}

float ParameterServerWorker::step(const Batch& batch, const StepInfo& info) {
  if (group_.mode_.aggregated)
    pull_same_version(min_version_);
  else
    client_.pull(model_.params(), min_version_, 0);
  const float loss = model_.forward_backward(batch);
  // A diverged worker must not spoil the shared parameters for the others: it
  // pushes nothing, and the trainer calls diverged().
  if (!std::isfinite(loss)) return loss;
  // ps-backup: only the first W - b gradients for a version are sent at all.
  if (group_.mode_.backup > 0 && !client_.claim(client_.pulled_version(0))) {
    holding_ticket_ = false;
    return loss;
  }
  client_.push(model_.grads(), info);
  holding_ticket_ = false;
  return loss;
}

// Evaluation, and the model the run ends with, see the shards' exact parameters.
void ParameterServerWorker::sync_for_evaluation() {
  client_.pull(model_.params(), 0, epoch_received_, /*exact=*/true);
}

bool ParameterServerWorker::diverged() {
  if (group_.mode_.workers_may_leave) return leave();
  // Its ticket (ssp) will never be pushed; ps-backup counts claims, not tickets.
  client_.stop_run(holding_ticket_ && !group_.mode_.aggregated);
  holding_ticket_ = false;
  return false;
}

bool ParameterServerWorker::leave() {
  if (!group_.mode_.workers_may_leave) return false;
  client_.leave(holding_ticket_);
  holding_ticket_ = false;
  return true;
}

void ParameterServerWorker::finish() {
  if (client_.worker() == 0) stats_ = client_.finish();
}

}  // namespace ptrain
