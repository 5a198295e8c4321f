// The gloo transport (comm/gloo_communicator.hpp), built when CMake found libgloo-dev.
#include "comm/gloo_communicator.hpp"

#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/context.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>

#include "comm/allreduce_algorithms.hpp"
#include "comm/collective_entry.hpp"
#include "comm/gloo_interface.hpp"
#include "comm/message_tags.hpp"
#include "core/error.hpp"
#include "core/half.hpp"
#include "core/run_failure.hpp"

namespace ptrain {

namespace {

// One TCP device (one I/O thread) per process, shared by its communicators.
std::mutex device_mutex;
std::shared_ptr<gloo::transport::Device> process_device;
std::string interface_line, interface_warning;

std::shared_ptr<gloo::transport::Device> device_for_this_process() {
  std::lock_guard lock(device_mutex);
  if (process_device) return process_device;
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  const GlooInterface chosen = choose_gloo_interface(std::getenv, name);
  gloo::transport::tcp::attr attr;
  attr.iface = chosen.iface;
  attr.hostname = chosen.hostname;
  try {
    process_device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw Error(fmt::format("gloo transport: cannot open a TCP device on {}: {}", chosen.description, e.what()));
  }
  interface_line = chosen.description;
  interface_warning = chosen.warning;
  return process_device;
}

// A gloo::Context over pairs this file connected itself (Gloo's own
// rendezvous wants a key-value store; the ranks have MPI instead).
class MeshContext : public gloo::Context {
 public:
  MeshContext(int rank, int size, std::shared_ptr<gloo::transport::Device> device,
              std::shared_ptr<gloo::transport::Context> pairs, std::chrono::milliseconds timeout)
      : gloo::Context(rank, size) {
    device_ = std::move(device);
    transportContext_ = std::move(pairs);
    setTimeout(timeout);
  }
};

// Appends a length-prefixed blob.
void put_blob(std::vector<std::byte>& out, const std::vector<char>& blob) {
  const auto n = static_cast<uint32_t>(blob.size());
  const auto* p = reinterpret_cast<const std::byte*>(&n);
  out.insert(out.end(), p, p + sizeof n);
  const auto* b = reinterpret_cast<const std::byte*>(blob.data());
  out.insert(out.end(), b, b + blob.size());
}

// The `index`-th blob of `all` (put_blob's format); throws if it is not there.
std::vector<char> blob_at(const std::vector<std::byte>& all, int index, int from) {
  size_t at = 0;
  for (int i = 0;; ++i) {
    uint32_t n = 0;
    if (at + sizeof n > all.size()) break;
    std::memcpy(&n, all.data() + at, sizeof n);
    at += sizeof n;
    if (at + n > all.size()) break;
    if (i == index)
      return std::vector<char>(reinterpret_cast<const char*>(all.data() + at),
                               reinterpret_cast<const char*>(all.data() + at + n));
    at += n;
  }
  throw Error(fmt::format("gloo transport: rank {}'s addresses are malformed", from));
}

// Gloo's reduce function for floats: c = a + b (c may be a).
void sum_floats(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<float*>(c);
  const auto* x = static_cast<const float*>(a);
  const auto* y = static_cast<const float*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

// Gloo's reduce function for IEEE halves: c = a + b (c may be a), as
// MpiCommunicator's half sum and the algorithms in comm/ add them.
void sum_halves(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<uint16_t*>(c);
  if (out != a) std::memcpy(out, a, n * sizeof(uint16_t));
  add_halves({out, n}, {static_cast<const uint16_t*>(b), n});
}

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(std::unique_ptr<MpiCommunicator> control, std::chrono::milliseconds timeout)
      : control_(std::move(control)), timeout_(timeout) {
    rank_ = control_->rank();
    size_ = control_->size();
    if (size_ == 1) return;
    // Every rank opens the device even if another rank cannot: the exchange
    // below carries the failure, so no rank waits for one that gave up.
    std::string trouble;
    std::shared_ptr<gloo::transport::Device> device;
    std::shared_ptr<gloo::transport::Context> pairs;
    std::vector<std::byte> mine;
    try {
      device = device_for_this_process();
      pairs = device->createContext(rank_, size_);
      pairs->setTimeout(timeout_);
      for (int peer = 0; peer < size_; ++peer)
        put_blob(mine, peer == rank_ ? std::vector<char>{} : pairs->createPair(peer)->address().bytes());
    } catch (const std::exception& e) {
      trouble = e.what();
      mine.clear();
    }
    const auto all = control_->allgatherv(mine);  // an empty blob list: that rank failed
    if (!trouble.empty()) throw Error(trouble);
    for (int peer = 0; peer < size_; ++peer)
      if (all[static_cast<size_t>(peer)].empty())
        throw Error(fmt::format("gloo transport: rank {} could not open its TCP device (its error says why)", peer));
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      try {
        pairs->getPair(peer)->connect(blob_at(all[static_cast<size_t>(peer)], rank_, peer));
      } catch (const std::exception& e) {
        throw Error(fmt::format("gloo transport: rank {} could not connect to rank {} over {}: {}", rank_, peer,
                                gloo_interface_in_use(), e.what()));
      }
    }
    context_ = std::make_shared<MeshContext>(rank_, size_, std::move(device), std::move(pairs), timeout_);
    // Every connection is up on every rank before the first message.
    control_->barrier();
  }

  ~GlooCommunicator() override {
    // Pairs closed before the device's I/O thread could touch them again.
    if (context_ && failure_.empty()) context_->closeConnections();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi+gloo"; }

  void allreduce(std::span<float> data, AllreduceAlgorithm algorithm) override {
    stats_.collectives++;
    enter(CollectiveEntry::allreduce(data.size(), algorithm));
    if (size_ == 1) return;
    if (algorithm != AllreduceAlgorithm::Native) return run_allreduce_algorithm(*this, data, algorithm);
    gloo_ring("allreduce", data.data(), data.size(), &sum_floats);
    count_allreduce_traffic(data.size_bytes());
  }

  void allreduce_half(std::span<uint16_t> data, AllreduceAlgorithm algorithm) override {
    stats_.collectives++;
    const auto entry = CollectiveEntry::allreduce_half(data.size(), algorithm);
    enter(entry);
    if (size_ == 1) return;
    if (algorithm != AllreduceAlgorithm::Native) return run_allreduce_half_algorithm(*this, data, algorithm);
    gloo_ring(entry.name(), data.data(), data.size(), &sum_halves);
    count_allreduce_traffic(data.size_bytes());
  }

  void broadcast(std::span<std::byte> data, int root) override {
    stats_.collectives++;
    control_->broadcast(data, root);
    (rank_ == root ? stats_.bytes_sent : stats_.bytes_received) += size_ > 1 ? data.size() : 0;
  }
  // Over Gloo too: a rank that waits on MPI spins, and would starve Gloo's
  // I/O thread on its core while a peer still needs it to send.
  void barrier() override {
    stats_.collectives++;
    enter(CollectiveEntry::barrier());  // every rank's token: that is a barrier
  }
  std::vector<std::vector<std::byte>> allgatherv(std::span<const std::byte> mine) override {
    enter(CollectiveEntry::allgatherv());
    return Communicator::allgatherv(mine);  // pairwise, over send and receive
  }

  void send(int peer, int tag, std::span<const std::byte> data) override {
    const std::string what = tag_name(tag);
    usable(what);
    auto buffer = unbound(const_cast<std::byte*>(data.data()), data.size());
    guarded(what, peer, "to receive", [&] {
      buffer->send(peer, slot(tag));
      buffer->waitSend(timeout_);
    });
    stats_.bytes_sent += data.size();
  }

  void recv(int peer, int tag, std::span<std::byte> data) override {
    const std::string what = tag_name(tag);
    usable(what);
    auto buffer = unbound(data.data(), data.size());
    guarded(what, peer, "", [&] {
      buffer->recv(peer, slot(tag));
      buffer->waitRecv(timeout_);
    });
    stats_.bytes_received += data.size();
  }

  void sendrecv(int to, int send_tag, std::span<const std::byte> out, int from, int recv_tag,
                std::span<std::byte> in) override {
    const std::string what = tag_name(recv_tag);
    usable(what);
    auto incoming = unbound(in.data(), in.size());
    auto outgoing = unbound(const_cast<std::byte*>(out.data()), out.size());
    bool received = false;
    guarded(what, from, "", [&] {
      incoming->recv(from, slot(recv_tag));
      outgoing->send(to, slot(send_tag));
      incoming->waitRecv(timeout_);
      received = true;
      outgoing->waitSend(timeout_);
    }, [&] { return received ? to : from; });
    stats_.bytes_sent += out.size();
    stats_.bytes_received += in.size();
  }

  void interrupt(const std::string& reason) override {
    {
      std::lock_guard lock(interrupt_mutex_);
      if (interrupt_reason_.empty()) interrupt_reason_ = reason;
    }
    interrupted_ = true;
    control_->interrupt(reason);
  }

 private:
  // The entry check (comm/collective_entry.hpp) over Gloo, so that a rank
  // waiting for the others sleeps instead of polling MPI (on a core its own
  // Gloo I/O thread may need): every rank sends every other its token and
  // waits for theirs.
  void enter(const CollectiveEntry& entry) {
    const std::string what = entry.name();
    usable(what);
    if (size_ == 1) return;
    using Token = CollectiveEntry::Token;
    const Token mine = entry.token();
    std::vector<Token> theirs(static_cast<size_t>(size_));
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> in(static_cast<size_t>(size_)), out(in.size());
    const uint64_t tag = slot(kTagCollectiveEntry);
    try {
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        const auto i = static_cast<size_t>(r);
        in[i] = context_->createUnboundBuffer(&theirs[i], sizeof(Token));
        in[i]->recv(r, tag);
        out[i] = context_->createUnboundBuffer(const_cast<Token*>(&mine), sizeof(Token));
        out[i]->send(r, tag);
      }
    } catch (const std::exception& e) {
      gloo_failed(what, fmt::format("{}: rank {} could not send its entry over gloo: {}", what, rank_, e.what()));
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    std::string missing;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      // After one peer's wait failed, Gloo has closed every pair: the others
      // that had arrived are done already, the rest fail at once.
      const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     deadline - std::chrono::steady_clock::now()),
                                 std::chrono::milliseconds(1));
      try {
        in[static_cast<size_t>(r)]->waitRecv(missing.empty() ? left : std::chrono::milliseconds(1));
      } catch (const std::exception&) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    if (!missing.empty()) gloo_failed(what, collective_timeout(what, rank_, timeout_, missing, "rank"));
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      try {
        out[static_cast<size_t>(r)]->waitSend(timeout_);
      } catch (const std::exception& e) {
        gloo_failed(what, fmt::format("{}: rank {} could not send its entry to rank {} over gloo: {}", what, rank_, r, e.what()));
      }
      const std::string mismatch =
          entry_mismatch(entry, rank_, CollectiveEntry::from_token(theirs[static_cast<size_t>(r)]), r, "rank");
      if (!mismatch.empty()) fail(mismatch);
    }
  }

  // Gloo's ring all-reduce of `count` elements at `data`, in place.
  template <typename T>
  void gloo_ring(const std::string& what, T* data, size_t count, gloo::AllreduceOptions::Func reduce) {
    usable(what);
    try {
      gloo::AllreduceOptions options(context_);
      options.setOutput(data, count);
      options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      options.setReduceFunction(std::move(reduce));
      options.setTimeout(timeout_);
      gloo::allreduce(options);
    } catch (const std::exception& e) {
      gloo_failed(what, fmt::format("{}: rank {} failed in gloo's ring ({})", what, rank_, e.what()));
    }
  }

  // After a wait on Gloo failed: a rank whose wait times out closes all its
  // connections, so its peers fail at once, naming it, though it is the one
  // still there. So every rank that fails asks who still answers on MPI (the
  // others that failed ask at about the same moment) and names who does not.
  [[noreturn]] void gloo_failed(const std::string& what, const std::string& message) {
    if (interrupted_) fail_interrupted(what);
    fail(message + control_->roll_call("every rank still answers"));
  }

  // Runs `body`, which waits on Gloo; its failure names `peer` (or whom `peer_now` says).
  template <typename Body>
  void guarded(const std::string& what, int peer, const char* waiting_for, Body&& body,
               const std::function<int()>& peer_now = {}) {
    try {
      body();
    } catch (const std::exception& e) {
      const int who = peer_now ? peer_now() : peer;
      gloo_failed(what, fmt::format("{}: rank {} gave up waiting for rank {}{} over gloo ({})", what, rank_, who,
                                    *waiting_for ? std::string(" ") + waiting_for : std::string(), e.what()));
    }
  }

  std::unique_ptr<gloo::transport::UnboundBuffer> unbound(std::byte* data, size_t bytes) {
    // Gloo wants a pointer even for an empty message.
    return context_->createUnboundBuffer(bytes ? static_cast<void*>(data) : &empty_, bytes);
  }
  static uint64_t slot(int tag) { return static_cast<uint64_t>(static_cast<uint32_t>(tag)); }

  void usable(const std::string& what) {
    if (interrupted_) fail_interrupted(what);
    if (!failure_.empty()) throw Error(fmt::format("{}: the gloo transport failed earlier: {}", what, failure_));
  }
  [[noreturn]] void fail_interrupted(const std::string& what) {
    std::lock_guard lock(interrupt_mutex_);
    if (failure_.empty()) failure_ = interrupt_reason_;
    throw InterruptedError(fmt::format("{}: {}", what, interrupt_reason_));
  }
  [[noreturn]] void fail(const std::string& message) {
    if (failure_.empty()) failure_ = message;
    throw Error(message);
  }

  std::unique_ptr<MpiCommunicator> control_;
  std::chrono::milliseconds timeout_;
  int rank_ = 0, size_ = 1;
  std::shared_ptr<gloo::Context> context_;  // holds the device and the pairs
  std::string failure_;
  std::atomic<bool> interrupted_{false};
  std::mutex interrupt_mutex_;
  std::string interrupt_reason_;
  std::byte empty_{};
};

}  // namespace

bool gloo_available() { return true; }

std::unique_ptr<Communicator> make_gloo_communicator(std::unique_ptr<MpiCommunicator> control,
                                                     std::chrono::milliseconds timeout) {
  return std::make_unique<GlooCommunicator>(std::move(control), timeout);
}

std::string gloo_interface_in_use() {
  std::lock_guard lock(device_mutex);
  return interface_line;
}

std::string gloo_interface_warning() {
  std::lock_guard lock(device_mutex);
  return interface_warning;
}

}  // namespace ptrain
