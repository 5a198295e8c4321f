// Fuzz target: the parameter-server wire messages (src/ps/ps_protocol), on
// both ends. As a shard: a real shard server (the strategy's own serve(),
// with shard 0's coordinator) takes requests from the input as if workers had
// sent them, and decodes what they push with the run's codec (fp16, int8, and
// the sparse format of top-k and DGC, src/compress/sparse_format), answering
// pulls through a pull codec. As a
// worker: a real PsClient makes its requests and takes the shards' replies
// (go-aheads, parameters, claim answers, statistics) from the input.
//
// Input: the strategy, the codec, the workers, the side (and which shard),
// then the script. A message is [from: uint8, length: uint16, bytes]; a
// `from` of 255 is a wait that times out. On the worker's side each request
// the client makes is chosen by one byte of the script before its replies.
// A refused message is a ptrain::Error of one line.
#include <deque>

#include "fuzz_support.hpp"
#include "ps/ps_client.hpp"
#include "run/train_config.hpp"

namespace ptrain::fuzz {
namespace {

constexpr uint8_t kTimesOut = 255;
constexpr size_t kParams = 15;  // a softmax model: weight [3, 4], bias [3]

FlatLayout model_layout() {
  FlatLayout layout;
  layout.add("weight", {3, 4});
  layout.add("bias", {3});
  return layout;
}

// A communicator whose incoming messages come from a script; what is sent is
// counted. `finish` (a shard's): when the script ends, worker 0 says Finish.
class ScriptedCommunicator : public Communicator {
 public:
  using Next = std::function<std::optional<AnyMessage>()>;
  ScriptedCommunicator(int rank, int size, Next next) : rank_(rank), size_(size), next_(std::move(next)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "fuzz"; }
  void allreduce(std::span<float>, AllreduceAlgorithm) override { unused("allreduce"); }
  void broadcast(std::span<std::byte>, int) override { unused("broadcast"); }
  void barrier() override { unused("barrier"); }
  void recv(int, int, std::span<std::byte>) override { unused("recv"); }
  void send(int peer, int, std::span<const std::byte> data) override {
    require(peer >= 0 && peer < size_ && peer != rank_, "a message sent to rank " + std::to_string(peer));
    sent.push_back({peer, {data.begin(), data.end()}});
  }
  std::optional<AnyMessage> recv_any(int, std::chrono::milliseconds) override { return next_(); }

  std::vector<AnyMessage> sent;  // `from` holds the peer sent to

 private:
  [[noreturn]] static void unused(const char* what) {
    require(false, std::string("the parameter server called ") + what);
    std::abort();
  }
  int rank_, size_;
  Next next_;
};

std::optional<AnyMessage> scripted_message(InputCursor& input, int size) {
  const auto from = input.take<uint8_t>();
  if (from == kTimesOut) return std::nullopt;
  const auto length = input.take<uint16_t>();
  const auto bytes = input.take_bytes(length);
  return AnyMessage{from % size,
                    {reinterpret_cast<const std::byte*>(bytes.data()),
                     reinterpret_cast<const std::byte*>(bytes.data()) + bytes.size()}};
}

struct Setup {
  RunPlan plan;
  int workers = 1, servers = 1, shard = 0;
  bool worker_side = false;
  StrategyFactory make_strategy;
  StrategyConfig config;
};

Setup setup_of(uint8_t strategy, uint8_t codec, uint8_t workers, uint8_t side) {
  Setup s;
  static const std::array<StrategyChoice, 4> strategies = {
      PsSyncOptions{}, PsBackupOptions{}, SspOptions{.staleness = 1, .stale_policy = "scale"},
      AsyncOptions{.stale_policy = "drop:3"}};
  s.plan.strategy = strategies[strategy % strategies.size()];
  s.plan.codec = *CodecRegistry::make(CodecRegistry::names()[codec % CodecRegistry::names().size()]);
  // The same byte picks what pulls send: dense, or a codec's change.
  s.plan.pull =
      *PullCodecRegistry::make(PullCodecRegistry::names()[codec % PullCodecRegistry::names().size()]);
  s.plan.optimizer = takes_momentum(s.plan.codec) ? OptimizerChoice{MomentumOptions{}} : AdamOptions{};
  s.workers = 1 + workers % 3;
  if (std::holds_alternative<PsBackupOptions>(s.plan.strategy)) s.workers = std::max(s.workers, 2);
  s.worker_side = side & 1;
  s.servers = side & 2 ? 2 : 1;
  s.shard = s.servers - 1;
  std::visit(
      [&](auto& o) {
        if constexpr (requires { o.servers; }) o.servers = s.servers;
      },
      s.plan.strategy);
  // As a run configures its strategy (the trainer then adds the run's length).
  const TrainConfig trainer = train_config(s.plan, s.workers);
  s.make_strategy = trainer.make_strategy;
  s.config = trainer.strategy;
  s.config.timeout = std::chrono::milliseconds(1000);
  s.config.steps_per_epoch = 4;
  s.config.total_steps = 8;
  return s;
}

std::vector<float> gradient(size_t step) {
  std::vector<float> g(kParams);
  for (size_t i = 0; i < g.size(); ++i) g[i] = 0.01f * static_cast<float>((i * 7 + step * 3) % 11) - 0.05f;
  return g;
}

void serve(const Setup& s, InputCursor& input) {
  const int size = s.workers + s.servers;
  ScriptedCommunicator comm(s.workers + s.shard, size, [&]() -> std::optional<AnyMessage> {
    if (input.left() == 0) return AnyMessage{0, ps_message(PsRequest{PsRequestKind::Finish, 0, 0, 0})};
    return scripted_message(input, size);
  });
  auto group = s.make_strategy(s.config, kParams, s.workers);
  group->serve(comm, s.shard, model_layout());
}

// A worker's requests, one byte each: what PsClient does for a strategy's step.
enum class Request : uint8_t { Init, Begin, Pull, Claim, Push, Leave, Finish, Count };

void be_worker(const Setup& s, InputCursor& input) {
  const int size = s.workers + s.servers;
  ScriptedCommunicator comm(s.workers - 1, size, [&] { return scripted_message(input, size); });
  PsClient client(comm, s.workers, shard_ranges(kParams, s.servers), s.config.codec, s.config.pull, model_layout(),
                  "fuzz", std::chrono::milliseconds(1000));
  std::vector<float> params(kParams, 0.5f);
  for (size_t step = 0; input.left() > 0; ++step) {
    const auto request = static_cast<Request>(input.take<uint8_t>() % static_cast<uint8_t>(Request::Count));
    switch (request) {
      case Request::Init:
        client.init(params);
        break;
      case Request::Begin:
        client.begin();
        break;
      case Request::Pull: {
        const auto version = input.take<uint8_t>(), received = input.take<uint8_t>();
        client.pull(params, version, received);
        break;
      }
      case Request::Claim:
        client.claim(input.take<uint8_t>());
        break;
      case Request::Push:
        client.push(gradient(step), StepInfo{step, static_cast<double>(step) / 4, s.workers});
        break;
      case Request::Leave:
        client.leave(input.take<uint8_t>() & 1);
        break;
      case Request::Finish:
        require(client.finish().size() == static_cast<size_t>(s.servers),
                "statistics of another shard count");
        break;
      case Request::Count:
        break;
    }
  }
}

// Seeds: what real clients send a shard over two steps of each strategy and
// codec (their pushes encoded by the codecs), and a worker's requests with
// the replies a shard writes.
std::vector<uint8_t> header(uint8_t strategy, uint8_t codec, uint8_t workers, uint8_t side) {
  return InputBuilder().put(strategy).put(codec).put(workers).put(side).bytes();
}

void put_message(InputBuilder& script, int from, std::span<const std::byte> bytes) {
  script.put(static_cast<uint8_t>(from)).put(static_cast<uint16_t>(bytes.size())).put_bytes(as_input(bytes));
}

void write_seeds(const std::string& dir) {
  for (uint8_t strategy = 0; strategy < 4; ++strategy) {
    for (uint8_t codec = 0; codec < CodecRegistry::names().size(); ++codec) {
      for (uint8_t side : {0, 2}) {  // shard 0 of 1, shard 1 of 2
        const Setup s = setup_of(strategy, codec, 1, side);
        const auto ranges = shard_ranges(kParams, s.servers);
        std::deque<AnyMessage> replies;  // what the client's recv_any gets, queued before each call
        std::vector<std::unique_ptr<ScriptedCommunicator>> comms;
        std::vector<std::unique_ptr<PsClient>> clients;
        for (int w = 0; w < s.workers; ++w) {
          comms.push_back(std::make_unique<ScriptedCommunicator>(w, s.workers + s.servers, [&replies] {
            AnyMessage m = std::move(replies.front());
            replies.pop_front();
            return std::optional<AnyMessage>(std::move(m));
          }));
          clients.push_back(std::make_unique<PsClient>(*comms.back(), s.workers, ranges, s.config.codec,
                                                       s.config.pull, model_layout(), "seed",
                                                       std::chrono::milliseconds(1)));
        }
        std::vector<float> params(kParams, 0.25f);
        const auto go = [&](uint64_t version) {
          replies.push_back({s.workers, ps_message(PsDecision{1, 0, version, 0})});
        };
        const auto parameters = [&](uint64_t version) {
          for (int shard = 0; shard < s.servers; ++shard) {
            const auto slice =
                std::span<const float>(params).subspan(ranges[shard].begin, ranges[shard].size());
            replies.push_back({s.workers + shard, ps_message(PsParamsHeader{version}, std::as_bytes(slice))});
          }
        };
        clients[0]->init(params);
        for (uint64_t step = 0; step < 2; ++step) {
          for (int w = 0; w < s.workers; ++w) {
            go(step);
            clients[w]->begin();
            parameters(step);
            clients[w]->pull(params, step, 0);
            if (strategy == 1) {
              go(step);
              clients[w]->claim(step);
            }
            clients[w]->push(gradient(step), StepInfo{step, static_cast<double>(step) / 4, s.workers});
          }
        }
        // The shard's script: every worker's requests to it, in the order they were sent.
        InputBuilder script;
        script.put_bytes(header(strategy, codec, 1, side));
        for (size_t i = 0;; ++i) {
          bool any = false;
          for (int w = 0; w < s.workers; ++w) {
            if (i >= comms[w]->sent.size()) continue;
            any = true;
            if (comms[w]->sent[i].from == s.workers + s.shard)
              put_message(script, w, comms[w]->sent[i].bytes);
          }
          if (!any) break;
        }
        const std::string name = "s" + std::to_string(strategy) + "-" +
                                 std::string(CodecRegistry::names()[codec]) + "-shards" +
                                 std::to_string(s.servers);
        write_seed(dir, "shard-" + name, script.bytes());

        // A worker's script: its requests and the replies a shard writes.
        InputBuilder worker;
        worker.put_bytes(header(strategy, codec, 1, static_cast<uint8_t>(side | 1)));
        worker.put(static_cast<uint8_t>(Request::Init));
        for (uint64_t step = 0; step < 2; ++step) {
          worker.put(static_cast<uint8_t>(Request::Begin));
          put_message(worker, s.workers, ps_message(PsDecision{1, 0, step, 0}));
          worker.put(static_cast<uint8_t>(Request::Pull)).put(static_cast<uint8_t>(step)).put(uint8_t{0});
          for (int shard = 0; shard < s.servers; ++shard) {
            const auto slice =
                std::span<const float>(params).subspan(ranges[shard].begin, ranges[shard].size());
            put_message(worker, s.workers + shard, ps_message(PsParamsHeader{step}, std::as_bytes(slice)));
          }
          worker.put(static_cast<uint8_t>(Request::Push));
        }
        worker.put(static_cast<uint8_t>(Request::Finish));
        for (int shard = 0; shard < s.servers; ++shard) {
          ServerStats stats;
          stats.updates = 2;
          stats.record_staleness(0);
          stats.record_staleness(1);
          stats.left_workers = {1};
          put_message(worker, s.workers + shard, stats.serialize());
        }
        write_seed(dir, "worker-" + name, worker.bytes());
      }
    }
  }
}

}  // namespace
}  // namespace ptrain::fuzz

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  ptrain::fuzz::write_seeds_if_asked(argc, argv, ptrain::fuzz::write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptrain::fuzz;
  InputCursor input({data, size});
  const auto strategy = input.take<uint8_t>(), codec = input.take<uint8_t>();
  const auto workers = input.take<uint8_t>(), side = input.take<uint8_t>();
  const Setup s = setup_of(strategy, codec, workers, side);
  accepted([&] { s.worker_side ? be_worker(s, input) : serve(s, input); });
  return 0;
}
