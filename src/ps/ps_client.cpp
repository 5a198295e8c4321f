#include "ps/ps_client.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/timeline.hpp"

namespace ptrain {

PsClient::PsClient(Communicator& comm, int workers, std::vector<ShardRange> ranges, const CodecConfig& codec,
                   const PullCodecChoice& pull, const FlatLayout& layout, std::string strategy,
                   std::chrono::milliseconds patience)
    : comm_(comm),
      workers_(workers),
      ranges_(std::move(ranges)),
      strategy_(std::move(strategy)),
      patience_(patience) {
  if (comm_.size() != workers_ + static_cast<int>(ranges_.size()))
    throw Error(fmt::format("{}: {} workers and {} server shard(s) need a group of {}, not {}", strategy_, workers_,
                            ranges_.size(), workers_ + static_cast<int>(ranges_.size()), comm_.size()));
  pulled_.assign(ranges_.size(), 0);
  for (const auto& r : ranges_) {
    const CodecRange range = codec_range(layout, r.begin, r.end);
    if (compresses(codec.choice)) codecs_.push_back(make_codec(codec, range, worker()));
    if (compresses_pulls(pull)) pull_decoders_.push_back(make_pull_codec(pull, range));
  }
}

void PsClient::send(size_t shard, const PsRequest& request, std::span<const std::byte> payload) {
  comm_.send(shard_rank(shard), kTagPsRequest, ps_message(request, payload));
}

std::vector<std::vector<std::byte>> PsClient::answers(size_t shards, const char* what) {
  std::vector<std::vector<std::byte>> got(shards);
  std::vector<bool> in(shards, false);
  for (size_t n = 0; n < shards; ++n) {
    auto message = comm_.recv_any(kTagPsReply, patience_);
    if (!message) {
      std::string missing;
      for (size_t s = 0; s < shards; ++s)
        if (!in[s]) missing += (missing.empty() ? "" : ", ") + std::to_string(s);
      throw Error(fmt::format("{}: worker {} timed out after {:.3g} s waiting for {} from server shard(s) {}",
                              strategy_, worker(), std::chrono::duration<double>(patience_).count(), what,
                              missing));
    }
    const int shard = message->from - workers_;
    if (shard < 0 || shard >= static_cast<int>(shards) || in[static_cast<size_t>(shard)])
      throw Error(fmt::format("{}: worker {} got an unexpected message from rank {} while waiting for {}",
                              strategy_, worker(), message->from, what));
    in[static_cast<size_t>(shard)] = true;
    got[static_cast<size_t>(shard)] = std::move(message->bytes);
  }
  return got;
}

void PsClient::init(std::span<const float> params) {
  for (size_t s = 0; s < ranges_.size(); ++s)
    send(s, {PsRequestKind::Init, static_cast<uint32_t>(worker()), 0, 0},
         std::as_bytes(params.subspan(ranges_[s].begin, ranges_[s].size())));
}

PsDecision PsClient::begin() {
  TimelineSpan span("go-ahead");
  send(0, {PsRequestKind::Begin, static_cast<uint32_t>(worker()), 0, 0});
  return ps_header<PsDecision>(answers(1, "the go-ahead for a step").front(), "go-ahead");
}

void PsClient::pull(std::span<float> params, uint64_t min_version, uint64_t min_received, bool exact) {
  TimelineSpan span("pull");
  for (size_t s = 0; s < ranges_.size(); ++s) {
    PsRequest request{PsRequestKind::Pull, static_cast<uint32_t>(worker()), min_version, min_received};
    request.exact = exact ? 1 : 0;
    send(s, request);
  }
  const auto replies = answers(ranges_.size(), "parameters");
  for (size_t s = 0; s < ranges_.size(); ++s) {
    const auto header = ps_header<PsParamsHeader>(replies[s], "parameters");
    const auto payload = ps_payload(replies[s], sizeof(PsParamsHeader));
    const auto mine = params.subspan(ranges_[s].begin, ranges_[s].size());
    if (header.encoding == static_cast<uint32_t>(PullEncoding::Coded) && !pull_decoders_.empty()) {
      TimelineSpan decoding("decode", "shard", static_cast<int64_t>(s));
      pull_decoders_[s]->decode_add(Encoded{mine.size(), {payload.begin(), payload.end()}}, mine);
    } else if (header.encoding == static_cast<uint32_t>(PullEncoding::Dense)) {
      if (payload.size() != mine.size_bytes())
        throw Error(fmt::format("{}: server shard {} sent {} bytes of parameters; worker {} expected {}", strategy_,
                                s, payload.size(), worker(), mine.size_bytes()));
      std::memcpy(mine.data(), payload.data(), payload.size());
    } else {
      throw Error(fmt::format("{}: server shard {} sent parameters in encoding {}, which worker {} does not {}",
                              strategy_, s, header.encoding, worker(),
                              pull_decoders_.empty() ? "take (its pulls are dense)" : "know"));
    }
    pulled_[s] = header.version;
  }
}

bool PsClient::claim(uint64_t version) {
  TimelineSpan span("claim");
  send(0, {PsRequestKind::Claim, static_cast<uint32_t>(worker()), version, 0});
  return ps_header<PsDecision>(answers(1, "the answer to its claim").front(), "claim answer").go != 0;
}

void PsClient::push(std::span<const float> grad, const StepInfo& info) {
  TimelineSpan span("push");
  for (size_t s = 0; s < ranges_.size(); ++s) {
    const PsRequest request{PsRequestKind::Push, static_cast<uint32_t>(worker()), pulled_[s], 0, info.epoch};
    const auto slice = grad.subspan(ranges_[s].begin, ranges_[s].size());
    if (codecs_.empty()) {
      send(s, request, std::as_bytes(slice));
    } else {
      Encoded encoded;
      {
        TimelineSpan encoding("encode", "shard", static_cast<int64_t>(s));
        encoded = codecs_[s]->encode(slice, info);
      }
      send(s, request, encoded.bytes);
    }
  }
}

void PsClient::leave(bool holding_ticket) {
  for (size_t s = 0; s < ranges_.size(); ++s)
    send(s, {PsRequestKind::Leave, static_cast<uint32_t>(worker()), 0, holding_ticket ? 1u : 0u});
}

void PsClient::stop_run(bool holding_ticket) {
  for (size_t s = 0; s < ranges_.size(); ++s)
    send(s, {PsRequestKind::Stop, static_cast<uint32_t>(worker()), 0, holding_ticket ? 1u : 0u});
}

std::vector<std::vector<std::byte>> PsClient::save(uint64_t min_version, uint64_t min_received) {
  for (size_t s = 0; s < ranges_.size(); ++s)
    send(s, {PsRequestKind::Save, static_cast<uint32_t>(worker()), min_version, min_received});
  return answers(ranges_.size(), "its state for a checkpoint");
}

void PsClient::restore(const std::vector<std::vector<std::byte>>& states) {
  if (states.size() != ranges_.size())
    throw Error(fmt::format("{}: a checkpoint of {} server shard(s) cannot restore {}", strategy_, states.size(),
                            ranges_.size()));
  for (size_t s = 0; s < ranges_.size(); ++s)
    send(s, {PsRequestKind::Restore, static_cast<uint32_t>(worker()), 0, 0}, states[s]);
}

void PsClient::save_codecs(StateWriter& out) const {
  for (const auto& c : codecs_) c->save_state(out);
}

void PsClient::load_codecs(StateReader& in) {
  for (auto& c : codecs_) c->load_state(in);
}

std::vector<ServerStats> PsClient::finish() {
  for (size_t s = 0; s < ranges_.size(); ++s) send(s, {PsRequestKind::Finish, static_cast<uint32_t>(worker()), 0, 0});
  std::vector<ServerStats> stats;
  for (const auto& bytes : answers(ranges_.size(), "statistics")) stats.push_back(ServerStats::deserialize(bytes));
  return stats;
}

CodecStats PsClient::codec_stats() const {
  CodecStats total;
  for (const auto& c : codecs_) total += c->stats();
  return total;
}

}  // namespace ptrain
