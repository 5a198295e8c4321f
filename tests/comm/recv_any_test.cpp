// Communicator::recv_any on the local (threads) backend: a message of any size
// from whichever worker sent first, per-sender order, other tags left alone,
// nothing within the wait, and an abort while waiting.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <thread>

#include "comm/local_group.hpp"
#include "core/error.hpp"
#include "local_workers.hpp"

namespace ptrain {
namespace {

std::vector<std::string> run_group(int size, const std::function<void(int, LocalCommunicator&)>& body) {
  return test::run_local_workers(size, std::chrono::seconds(60), body);
}

std::vector<std::byte> bytes_of(size_t count, int value) {
  return std::vector<std::byte>(count, std::byte(value));
}

constexpr auto kLongWait = std::chrono::seconds(60);
constexpr auto kShortWait = std::chrono::milliseconds(50);

TEST(LocalRecvAny, TakesMessagesOfAnySizeEarliestSentFirst) {
  // Workers send one after another, not in rank order: 3 (empty), 1 (twice), 2.
  const std::vector<std::pair<int, std::vector<std::byte>>> sent = {
      {3, {}}, {1, bytes_of(5, 1)}, {1, bytes_of(7, 11)}, {2, bytes_of(100000, 2)}};
  std::vector<AnyMessage> received;
  uint64_t bytes_received = 0;
  const auto errors = run_group(4, [&](int r, LocalCommunicator& comm) {
    for (int sender : {3, 1, 2}) {
      if (r == sender)
        for (const auto& [from, bytes] : sent)
          if (from == sender) comm.send(0, 42, bytes);
      comm.barrier();  // the next sender starts after this one has sent
    }
    if (r != 0) return;
    for (size_t i = 0; i < sent.size(); ++i) {
      auto message = comm.recv_any(42, kLongWait);
      ASSERT_TRUE(message) << "message " << i;
      received.push_back(std::move(*message));
    }
    EXPECT_FALSE(comm.recv_any(42, kShortWait));
    bytes_received = comm.stats().bytes_received;
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  ASSERT_EQ(received.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(received[i].from, sent[i].first) << "message " << i;
    EXPECT_EQ(received[i].bytes, sent[i].second) << "message " << i;
  }
  EXPECT_EQ(bytes_received, 5u + 7u + 100000u);
}

TEST(LocalRecvAny, LeavesOtherTagsAndKeepsOrderWithRecv) {
  const auto errors = run_group(2, [&](int r, LocalCommunicator& comm) {
    if (r == 1) {
      comm.send(0, 9, bytes_of(1, 9));
      comm.send(0, 7, bytes_of(2, 70));
      comm.send(0, 7, bytes_of(3, 71));
    }
    comm.barrier();
    if (r != 0) return;
    // recv() and recv_any() take from the same queue, in order.
    std::vector<std::byte> first(2);
    comm.recv(1, 7, first);
    EXPECT_EQ(first, bytes_of(2, 70));
    auto second = comm.recv_any(7, kLongWait);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->from, 1);
    EXPECT_EQ(second->bytes, bytes_of(3, 71));
    EXPECT_FALSE(comm.recv_any(7, std::chrono::milliseconds(0)));
    EXPECT_FALSE(comm.recv_any(7, kShortWait));
    EXPECT_FALSE(comm.recv_any(8, kShortWait));
    std::vector<std::byte> other(1);
    comm.recv(1, 9, other);  // still there
    EXPECT_EQ(other, bytes_of(1, 9));
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

TEST(LocalRecvAny, ConcurrentSendersKeepTheirOwnOrder) {
  constexpr int kWorkers = 4, kMessages = 300;
  std::map<int, std::vector<int>> sequence_by_sender;
  const auto errors = run_group(kWorkers, [&](int r, LocalCommunicator& comm) {
    if (r != 0) {
      // Message k: k+1 bytes, each k % 251, so size and contents say which it is.
      for (int k = 0; k < kMessages; ++k) comm.send(0, 5, bytes_of(static_cast<size_t>(k) + 1, k % 251));
      return;
    }
    for (int i = 0; i < (kWorkers - 1) * kMessages; ++i) {
      auto message = comm.recv_any(5, kLongWait);
      ASSERT_TRUE(message) << "message " << i;
      const int k = static_cast<int>(message->bytes.size()) - 1;
      ASSERT_EQ(message->bytes, bytes_of(static_cast<size_t>(k) + 1, k % 251));
      sequence_by_sender[message->from].push_back(k);
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  ASSERT_EQ(sequence_by_sender.size(), static_cast<size_t>(kWorkers - 1));
  for (const auto& [from, sequence] : sequence_by_sender) {
    ASSERT_EQ(sequence.size(), static_cast<size_t>(kMessages)) << "from " << from;
    for (int k = 0; k < kMessages; ++k) EXPECT_EQ(sequence[static_cast<size_t>(k)], k) << "from " << from;
  }
}

TEST(LocalRecvAny, AbortWakesTheWaiterWithTheReason) {
  auto group = std::make_shared<LocalGroup>(2, std::chrono::seconds(60));
  std::string error;
  bool returned = false;
  std::thread server([&] {
    LocalCommunicator comm(group, 0);
    try {
      comm.recv_any(7, kLongWait);  // nobody sends: only the abort ends this early
      returned = true;
    } catch (const Error& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(kShortWait);  // most likely asleep in recv_any by now; either way it must throw
  group->abort("worker 1 failed: out of memory");
  server.join();
  EXPECT_FALSE(returned);
  EXPECT_EQ(error, "worker 1 failed: out of memory");
  // Once aborted, even a message already there is not handed out.
  LocalCommunicator sender(group, 1), receiver(group, 0);
  sender.send(0, 7, bytes_of(1, 1));
  EXPECT_THROW(receiver.recv_any(7, std::chrono::milliseconds(0)), Error);
}

TEST(LocalRecvAny, NegativeWaitIsNamed) {
  const auto errors =
      run_group(1, [](int, LocalCommunicator& comm) { comm.recv_any(7, std::chrono::milliseconds(-5)); });
  EXPECT_EQ(errors[0], "recv_any: worker 0 got a negative wait (-5 ms)");
}

// A wrapper that implements only the primitives gets the default, which says it cannot.
class PrimitivesOnly : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "primitives-only"; }
  void allreduce(std::span<float>, AllreduceAlgorithm) override {}
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}
  void send(int, int, std::span<const std::byte>) override {}
  void recv(int, int, std::span<std::byte>) override {}
};

TEST(LocalRecvAny, DefaultImplementationSaysItIsNotSupported) {
  PrimitivesOnly comm;
  try {
    comm.recv_any(7, kShortWait);
    FAIL() << "recv_any returned";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "recv_any: not supported by primitives-only");
  }
}

}  // namespace
}  // namespace ptrain
