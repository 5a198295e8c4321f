#include "ps/shard_server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/state_stream.hpp"
#include "core/timeline.hpp"

namespace ptrain {

ShardServer::ShardServer(Communicator& comm, ShardConfig config, std::unique_ptr<StepCoordinator> coordinator)
    : comm_(comm),
      config_(std::move(config)),
      coordinator_(std::move(coordinator)),
      optimizer_(make_optimizer(config_.optimizer, config_.range.size())),
      decoder_(make_codec(config_.codec, config_.codec_range, 0)),
      params_(config_.range.size()),
      sum_(config_.range.size()),
      pulls_(config_.pull, config_.codec_range, config_.workers) {
  if (comm_.size() < config_.workers + 1 || config_.shard < 0 || config_.workers + config_.shard >= comm_.size())
    throw Error(fmt::format("{}: shard {} does not fit a group of {} with {} workers", config_.strategy,
                            config_.shard, comm_.size(), config_.workers));
  if (config_.gradients_per_update < 1) throw Error(config_.strategy + ": an update needs at least one gradient");
}

void ShardServer::serve() {
  TimelineThread timeline(fmt::format("server {}", config_.shard));
  for (;;) {
    auto message = comm_.recv_any(kTagPsRequest, config_.timeout);
    if (!message) {
      // Idle is normal (workers evaluate, or wait at a barrier); a half-collected update is not.
      if (!collected_.empty())
        throw Error(fmt::format("{}: server shard {} timed out after {:.3g} s waiting for gradients for update "
                                "{} ({} of {} in; none yet from worker(s) {})",
                                config_.strategy, config_.shard,
                                std::chrono::duration<double>(config_.timeout).count(), version_ + 1,
                                collected_.size(), config_.gradients_per_update, waiting_for()));
      continue;
    }
    if (message->from >= config_.workers)
      throw Error(fmt::format("{}: server shard {} got a request from rank {}, which is not a worker",
                              config_.strategy, config_.shard, message->from));
    const auto request = ps_header<PsRequest>(message->bytes, "parameter server request");
    if (request.worker != static_cast<uint32_t>(message->from))
      throw Error(fmt::format("{}: server shard {}: rank {} sent a request as worker {}", config_.strategy,
                              config_.shard, message->from, request.worker));
    if (request.kind == PsRequestKind::Finish) {
      ServerStats stats = this->stats();
      if (coordinator_) coordinator_->add_stats(stats);
      const auto bytes = stats.serialize();
      reply(message->from, bytes);
      return;
    }
    handle(message->from, std::move(message->bytes));
    answer_held();
  }
}

void ShardServer::handle(int from, std::vector<std::byte>&& message) {
  const auto request = ps_header<PsRequest>(message, "parameter server request");
  const auto payload = ps_payload(message, sizeof(PsRequest));
  switch (request.kind) {
    case PsRequestKind::Init:
      if (payload.size() != params_.size() * sizeof(float))
        throw Error(fmt::format("{}: server shard {} holds {} parameters but worker {} sent {} bytes of them",
                                config_.strategy, config_.shard, params_.size(), from, payload.size()));
      std::memcpy(params_.data(), payload.data(), payload.size());
      pulls_.parameters_changed();
      initialized_ = true;
      return;
    case PsRequestKind::Begin:
      if (!coordinator_)
        throw Error(fmt::format("{}: worker {} asked server shard {} to begin a step (only shard 0 coordinates)",
                                config_.strategy, from, config_.shard));
      held_begins_.push_back(from);
      return;
    case PsRequestKind::Pull:
      held_pulls_.push_back({from, request});
      return;
    case PsRequestKind::Claim: {
      if (!coordinator_)
        throw Error(fmt::format("{}: worker {} sent a claim to server shard {} (only shard 0 coordinates)",
                                config_.strategy, from, config_.shard));
      PsDecision decision;
      decision.go = coordinator_->claim(from, request.version) ? 1 : 0;
      decision.version = request.version;
      reply(from, ps_message(decision));
      return;
    }
    case PsRequestKind::Push:
      push(request, std::move(message));
      return;
    case PsRequestKind::Leave:
      if (request.received > 0) received_++;  // its ticket will never be pushed
      stats_.left_workers.push_back(request.worker);
      if (coordinator_) coordinator_->left(from);
      return;
    case PsRequestKind::Stop:
      if (request.received > 0) received_++;  // as for Leave
      if (coordinator_) coordinator_->stop_run();
      return;
    case PsRequestKind::Save:
      held_saves_.push_back({from, request});
      return;
    case PsRequestKind::Restore:
      load_state(payload, from);
      return;
    case PsRequestKind::Finish:
      return;  // handled by serve()
  }
  throw Error(fmt::format("{}: server shard {} got a request of unknown kind {} from worker {}", config_.strategy,
                          config_.shard, static_cast<uint32_t>(request.kind), from));
}

void ShardServer::push(const PsRequest& request, std::vector<std::byte>&& message) {
  const auto payload = ps_payload(message, sizeof(PsRequest));
  const int worker = static_cast<int>(request.worker);
  if (!initialized_)
    throw Error(fmt::format("{}: worker {} pushed to server shard {} before it had its initial parameters",
                            config_.strategy, worker, config_.shard));
  // Raw floats are checked on arrival, so that a bad push is named even when it
  // would be dropped, or its update would never complete.
  if (!decoder_ && payload.size() != params_.size() * sizeof(float))
    throw Error(fmt::format("{}: worker {} pushed {} bytes to server shard {}, which expects {} floats",
                            config_.strategy, worker, payload.size(), config_.shard, params_.size()));
  if (!(request.epoch >= 0 && request.epoch <= 1e9))
    throw Error(fmt::format("{}: worker {} pushed a gradient to server shard {} for epoch {}", config_.strategy, worker,
                            config_.shard, request.epoch));
  received_++;
  stats_.pushed_bytes += payload.size();
  if (coordinator_) coordinator_->pushed(worker, config_.aggregated ? 0 : staleness_of(request));
  if (!config_.aggregated) return apply_one(request, payload);
  if (request.version != version_)
    throw Error(fmt::format("{}: server shard {} is at update {} but worker {} pushed a gradient for update {}",
                            config_.strategy, config_.shard, version_, worker, request.version));
  if (collected_.count(worker))
    throw Error(fmt::format("{}: worker {} pushed twice to server shard {} for update {}", config_.strategy,
                            worker, config_.shard, version_));
  collected_[worker] = std::move(message);  // `payload` points into it
  if (collected_.size() == config_.gradients_per_update) apply_aggregated();
}

void ShardServer::apply_aggregated() {
  TimelineSpan span("apply", "gradients", static_cast<int64_t>(collected_.size()));
  std::fill(sum_.begin(), sum_.end(), 0.0f);
  for (const auto& [worker, message] : collected_)  // in worker order
    decode_into(ps_payload(message, sizeof(PsRequest)), sum_, worker);
  const float scale = 1.0f / static_cast<float>(collected_.size());
  for (float& g : sum_) g *= scale;
  // One update from the same step of every worker: the same epoch in each push.
  optimizer_->set_lr(lr_at(config_.optimizer, ps_header<PsRequest>(collected_.begin()->second, "push").epoch));
  optimizer_->step(params_, sum_);
  pulls_.parameters_changed();
  version_++;
  stats_.updates++;
  for (size_t i = 0; i < collected_.size(); ++i) stats_.record_staleness(0);
  collected_.clear();
}

uint64_t ShardServer::staleness_of(const PsRequest& request) const {
  return version_ >= request.version ? version_ - request.version : 0;
}

void ShardServer::apply_one(const PsRequest& request, std::span<const std::byte> payload) {
  const uint64_t staleness = staleness_of(request);
  const double scale = config_.staleness_rule ? config_.staleness_rule(staleness) : 1.0;
  if (scale <= 0) {
    stats_.dropped_stale++;
    return;
  }
  TimelineSpan span("apply", "staleness", static_cast<int64_t>(staleness));
  std::fill(sum_.begin(), sum_.end(), 0.0f);
  decode_into(payload, sum_, static_cast<int>(request.worker));
  optimizer_->set_lr(static_cast<float>(lr_at(config_.optimizer, request.epoch) * scale));  // x1 is exact
  optimizer_->step(params_, sum_);
  pulls_.parameters_changed();
  version_++;
  stats_.updates++;
  stats_.record_staleness(staleness);
}

void ShardServer::decode_into(std::span<const std::byte> payload, std::span<float> out, int worker) const {
  if (!decoder_) {
    if (payload.size() != out.size() * sizeof(float))
      throw Error(fmt::format("{}: worker {} pushed {} bytes to server shard {}, which expects {} floats",
                              config_.strategy, worker, payload.size(), config_.shard, out.size()));
    const auto* g = reinterpret_cast<const float*>(payload.data());
    for (size_t i = 0; i < out.size(); ++i) out[i] += g[i];
    return;
  }
  Encoded encoded{out.size(), std::vector<std::byte>(payload.begin(), payload.end())};
  decoder_->decode_add(encoded, out);
}

bool ShardServer::pull_ready(const PsRequest& request) const {
  return initialized_ && version_ >= request.version && received_ >= request.received;
}

void ShardServer::answer_held() {
  // A Begin answered may change what the coordinator says to the others: ask
  // until nothing changes. Not before the shard has its parameters, which a
  // resumed run's Restore brings with the coordinator's state.
  for (bool changed = initialized_; changed && coordinator_;) {
    changed = false;
    for (size_t i = 0; i < held_begins_.size(); ++i) {
      const int worker = held_begins_[i];
      if (auto decision = coordinator_->begin(worker)) {
        held_begins_.erase(held_begins_.begin() + static_cast<std::ptrdiff_t>(i));
        reply(worker, ps_message(*decision));
        changed = true;
        break;
      }
    }
  }
  for (size_t i = 0; i < held_pulls_.size();) {
    if (!pull_ready(held_pulls_[i].request)) {
      ++i;
      continue;
    }
    const HeldPull pull = held_pulls_[i];
    held_pulls_.erase(held_pulls_.begin() + static_cast<std::ptrdiff_t>(i));
    answer_pull(pull);
  }
  // A checkpoint waits for every push it counts, and for their update.
  for (size_t i = 0; i < held_saves_.size();) {
    if (!pull_ready(held_saves_[i].request) || !collected_.empty()) {
      ++i;
      continue;
    }
    const int worker = held_saves_[i].worker;
    held_saves_.erase(held_saves_.begin() + static_cast<std::ptrdiff_t>(i));
    reply(worker, save_state());
  }
}

std::vector<std::byte> ShardServer::save_state() const {
  StateWriter out;
  out.put_value("shard.index", static_cast<int32_t>(config_.shard));
  out.put("shard.params", params_);
  optimizer_->save_state(out);
  if (decoder_) decoder_->save_state(out);
  out.put_value("shard.version", version_);
  out.put_value("shard.received", received_);
  out.put("shard.stats", stats().serialize());
  pulls_.save_state(out);
  if (coordinator_) coordinator_->save_state(out);
  return out.take();
}

void ShardServer::load_state(std::span<const std::byte> state, int from) {
  if (initialized_)
    throw Error(fmt::format("{}: worker {} restored server shard {} after it had its parameters", config_.strategy,
                            from, config_.shard));
  StateReader in(state, fmt::format("{}: the checkpoint of server shard {}", config_.strategy, config_.shard));
  const auto shard = in.take_value<int32_t>("shard.index");
  if (shard != config_.shard)
    throw Error(fmt::format("{}: server shard {} was sent the checkpoint of shard {}", config_.strategy,
                            config_.shard, shard));
  in.take("shard.params", std::span<float>(params_));
  optimizer_->load_state(in);
  if (decoder_) decoder_->load_state(in);
  version_ = in.take_value<uint64_t>("shard.version");
  received_ = in.take_value<uint64_t>("shard.received");
  stats_ = ServerStats::deserialize(in.take_vector<std::byte>("shard.stats"));
  pulls_.set_counts(stats_.pulled);
  pulls_.load_state(in);
  if (coordinator_) coordinator_->load_state(in);
  in.expect_end();
  pulls_.parameters_changed();
  initialized_ = true;
}

void ShardServer::answer_pull(const HeldPull& pull) {
  reply(pull.worker, pulls_.reply(pull.worker, params_, version_, pull.request.exact != 0));
}

ServerStats ShardServer::stats() const {
  ServerStats stats = stats_;
  stats.pulled = pulls_.counts();
  return stats;
}

void ShardServer::reply(int worker, std::span<const std::byte> message) { comm_.send(worker, kTagPsReply, message); }

std::string ShardServer::waiting_for() const {
  std::string missing;
  for (int w = 0; w < config_.workers; ++w)
    if (!collected_.count(w)) missing += (missing.empty() ? "" : ", ") + std::to_string(w);
  return missing;
}

}  // namespace ptrain
