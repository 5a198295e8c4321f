// MpiCommunicator::recv_any and split(), as many ranks as mpirun started:
// rank 0 takes one message of every size from every other rank, in whatever
// order MPI matches them; and each half of split(rank % 2) runs collectives of
// its own while the parent keeps working.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "comm/mpi_communicator.hpp"
#include "mpi_test_support.hpp"
#include "core/error.hpp"
#include "core/half.hpp"

namespace ptrain {
namespace {

constexpr auto kLongWait = std::chrono::seconds(60);
constexpr auto kShortWait = std::chrono::milliseconds(50);

// Rank r's message: r bytes of value r (rank 0 would send nothing).
std::vector<std::byte> rank_bytes(int rank) {
  return std::vector<std::byte>(static_cast<size_t>(rank), std::byte(rank));
}

TEST(MpiRecvAny, RankZeroGetsEveryRankOnceWhateverTheSize) {
  MpiCommunicator comm(std::chrono::seconds(60));
  const int n = comm.size();
  if (comm.rank() != 0) {
    comm.send(0, 100, rank_bytes(comm.rank()));
    comm.send(0, 101, {});  // empty, on another tag
  } else {
    // Tag 100 first: the empty tag-101 messages, already there, must not be taken.
    std::set<int> senders;
    uint64_t bytes = 0;
    for (int i = 1; i < n; ++i) {
      auto message = comm.recv_any(100, kLongWait);
      ASSERT_TRUE(message) << "message " << i;
      ASSERT_GT(message->from, 0);
      ASSERT_LT(message->from, n);
      EXPECT_TRUE(senders.insert(message->from).second) << "rank " << message->from << " twice";
      EXPECT_EQ(message->bytes, rank_bytes(message->from));
      bytes += message->bytes.size();
    }
    EXPECT_EQ(senders.size(), static_cast<size_t>(n - 1));
    EXPECT_EQ(comm.stats().bytes_received, bytes);
    EXPECT_EQ(bytes, static_cast<uint64_t>(n) * static_cast<uint64_t>(n - 1) / 2);
    std::set<int> empty_senders;
    for (int i = 1; i < n; ++i) {
      auto message = comm.recv_any(101, kLongWait);
      ASSERT_TRUE(message) << "empty message " << i;
      EXPECT_TRUE(message->bytes.empty());
      empty_senders.insert(message->from);
    }
    EXPECT_EQ(empty_senders.size(), static_cast<size_t>(n - 1));
    EXPECT_FALSE(comm.recv_any(100, kShortWait));
    EXPECT_FALSE(comm.recv_any(101, std::chrono::milliseconds(0)));
  }
  comm.barrier();
}

TEST(MpiRecvAny, EachSendersMessagesComeInOrder) {
  MpiCommunicator comm(std::chrono::seconds(60));
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  constexpr int kMessages = 50;
  if (comm.rank() != 0) {
    // Message k: k+1 bytes, so its size says which it is.
    for (int k = 0; k < kMessages; ++k)
      comm.send(0, 102, std::vector<std::byte>(static_cast<size_t>(k) + 1, std::byte(comm.rank())));
  } else {
    std::map<int, int> next;  // sender -> the k it must send next
    for (int i = 0; i < (comm.size() - 1) * kMessages; ++i) {
      auto message = comm.recv_any(102, kLongWait);
      ASSERT_TRUE(message) << "message " << i;
      EXPECT_EQ(static_cast<int>(message->bytes.size()) - 1, next[message->from]++)
          << "from " << message->from;
      EXPECT_EQ(message->bytes.front(), std::byte(message->from));
    }
    for (int r = 1; r < comm.size(); ++r) EXPECT_EQ(next[r], kMessages) << "from " << r;
  }
  comm.barrier();
}

TEST(MpiRecvAny, NothingSentGivesNullopt) {
  MpiCommunicator comm(std::chrono::seconds(60));
  EXPECT_FALSE(comm.recv_any(103, kShortWait));
  EXPECT_FALSE(comm.recv_any(103, std::chrono::milliseconds(0)));
  EXPECT_EQ(error_of([&] { comm.recv_any(-1, kShortWait); }),
            fmt::format("recv_any: rank {} got a negative tag (-1)", comm.rank()));
  comm.barrier();
}

TEST(MpiSplit, EachHalfRunsItsOwnCollectivesAndTheParentStillWorks) {
  MpiCommunicator comm(std::chrono::seconds(60));
  const int n = comm.size(), parity = comm.rank() % 2;
  auto half = comm.split(parity);
  ASSERT_TRUE(half);
  EXPECT_EQ(half->backend(), "mpi");
  EXPECT_EQ(half->size(), parity == 0 ? (n + 1) / 2 : n / 2);
  EXPECT_EQ(half->rank(), comm.rank() / 2);
  // Rank order: every member's parent rank, gathered on the half.
  const int parent_rank = comm.rank();
  const auto members = half->allgatherv(std::as_bytes(std::span<const int>(&parent_rank, 1)));
  ASSERT_EQ(members.size(), static_cast<size_t>(half->size()));
  for (int i = 0; i < half->size(); ++i) {
    int member = -1;
    ASSERT_EQ(members[static_cast<size_t>(i)].size(), sizeof member);
    std::memcpy(&member, members[static_cast<size_t>(i)].data(), sizeof member);
    EXPECT_EQ(member, 2 * i + parity) << "member " << i;
  }
  // The sum of (parent rank + 1) over this half's ranks only.
  float expected = 0;
  for (int r = parity; r < n; r += 2) expected += static_cast<float>(r + 1);
  for (const auto algorithm : {AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring}) {
    std::vector<float> v(1001, static_cast<float>(comm.rank() + 1));
    half->allreduce(v, algorithm);
    EXPECT_EQ(v, std::vector<float>(v.size(), expected)) << to_string(algorithm);
  }
  std::vector<uint16_t> halves(17, float_to_half(1.0f));  // through its own half-sum MPI_Op
  half->allreduce_half(halves);
  EXPECT_EQ(halves, std::vector<uint16_t>(halves.size(), float_to_half(static_cast<float>(half->size()))));
  half->barrier();
  // The parent, after and while the half lives.
  std::vector<float> all(33, 1.0f);
  comm.allreduce(all);
  EXPECT_EQ(all, std::vector<float>(all.size(), static_cast<float>(n)));
  comm.barrier();
  half.reset();
  comm.barrier();
}

TEST(MpiSplit, NegativeColorIsNamedOnEveryRank) {
  MpiCommunicator comm(std::chrono::seconds(60));
  const int last = comm.size() - 1;
  const auto error = error_of([&] { comm.split(comm.rank() == last ? -1 : 0); });
  EXPECT_EQ(error, fmt::format("split: rank {} passed color -1 (colors must not be negative)", last));
  comm.barrier();  // still usable: every rank failed alike
}

TEST(MpiSplit, RankThatNeverArrivesIsAnErrorAndTheParentGivesUp) {
  MpiCommunicator comm = communicator_when_all_arrived(std::chrono::milliseconds(500));
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  const int last = comm.size() - 1;
  if (comm.rank() == last) return;  // never splits
  EXPECT_EQ(error_of([&] { comm.split(0); }),
            fmt::format("split: rank {} timed out after 0.5 s waiting for the other ranks", comm.rank()));
  EXPECT_TRUE(error_of([&] {
                comm.barrier();
              }).starts_with("barrier: communicator unusable after an earlier failure: split: "));
}

}  // namespace
}  // namespace ptrain
