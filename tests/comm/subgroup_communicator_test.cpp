// Some workers as a communicator of their own: each subgroup's all-reduces
// (every algorithm), broadcast, barrier and all-gather see only its members,
// give the bits of a group of that many workers, and never take a message of
// the parent's collectives or of another subgroup running at the same time.
#include <gtest/gtest.h>

#include <numeric>

#include "comm/allreduce_algorithms.hpp"
#include "comm/subgroup_communicator.hpp"
#include "core/error.hpp"
#include "local_workers.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

constexpr auto kTimeout = std::chrono::seconds(20);

// Worker r's values: distinct per worker and element, with fractions whose sums round.
std::vector<float> values_of(int r, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.1f * static_cast<float>(r + 1) + 1e-3f * static_cast<float>(i);
  return v;
}

TEST(SubgroupCommunicator, EachSubgroupAllReducesAmongItsMembersAlone) {
  const int workers = 6, stages = 2;  // subgroups {0, 2, 4} and {1, 3, 5}
  const size_t n = 1000;
  for (const auto algorithm : {AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring,
                               AllreduceAlgorithm::HalvingDoubling, AllreduceAlgorithm::Tree}) {
    // What a group of three workers alone computes, for each subgroup's values.
    std::vector<std::vector<float>> expected(stages);
    for (int s = 0; s < stages; ++s) {
      std::vector<std::vector<float>> out(3);
      const auto errors = test::run_local_workers(3, kTimeout, [&](int r, LocalCommunicator& comm) {
        out[static_cast<size_t>(r)] = values_of(s + stages * r, n);
        run_allreduce_algorithm(comm, out[static_cast<size_t>(r)],
                                algorithm == AllreduceAlgorithm::Native ? AllreduceAlgorithm::Ring : algorithm);
      });
      for (const auto& e : errors) ASSERT_EQ(e, "");
      expected[static_cast<size_t>(s)] = out[0];
    }
    std::vector<std::vector<float>> got(workers);
    std::vector<float> whole(workers);
    const auto errors = test::run_local_workers(workers, kTimeout, [&](int r, LocalCommunicator& comm) {
      std::vector<int> members;
      for (int m = r % stages; m < workers; m += stages) members.push_back(m);
      SubgroupCommunicator sub(comm, members);
      EXPECT_EQ(sub.rank(), r / stages);
      EXPECT_EQ(sub.size(), 3);
      auto& mine = got[static_cast<size_t>(r)] = values_of(r, n);
      sub.allreduce(mine, algorithm);
      // The parent's own collective, between the subgroups' ones.
      float one = 1;
      comm.allreduce(std::span<float>(&one, 1), AllreduceAlgorithm::Ring);
      whole[static_cast<size_t>(r)] = one;
      sub.barrier();
    });
    for (const auto& e : errors) ASSERT_EQ(e, "");
    for (int r = 0; r < workers; ++r) {
      EXPECT_EQ(got[static_cast<size_t>(r)], expected[static_cast<size_t>(r % stages)]) << to_string(algorithm);
      EXPECT_EQ(whole[static_cast<size_t>(r)], static_cast<float>(workers));
    }
  }
}

TEST(SubgroupCommunicator, BroadcastsAndGathersWithinItsMembers) {
  const int workers = 4;  // subgroups {0, 3} and {1, 2}
  std::vector<std::vector<std::byte>> gathered(workers);
  std::vector<uint32_t> broadcast(workers);
  const auto errors = test::run_local_workers(workers, kTimeout, [&](int r, LocalCommunicator& comm) {
    SubgroupCommunicator sub(comm, r == 0 || r == 3 ? std::vector<int>{0, 3} : std::vector<int>{2, 1});
    uint32_t value = sub.rank() == 1 ? 100 + static_cast<uint32_t>(r) : 0;
    sub.broadcast(std::as_writable_bytes(std::span<uint32_t>(&value, 1)), 1);
    broadcast[static_cast<size_t>(r)] = value;
    const std::byte mine{static_cast<unsigned char>(r)};
    for (const auto& bytes : sub.allgatherv(std::span<const std::byte>(&mine, 1)))
      gathered[static_cast<size_t>(r)].insert(gathered[static_cast<size_t>(r)].end(), bytes.begin(), bytes.end());
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  EXPECT_EQ(broadcast, (std::vector<uint32_t>{103, 101, 101, 103}));
  const auto bytes = [](std::initializer_list<int> v) {
    std::vector<std::byte> out;
    for (const int b : v) out.push_back(static_cast<std::byte>(b));
    return out;
  };
  EXPECT_EQ(gathered[0], bytes({0, 3}));
  EXPECT_EQ(gathered[3], bytes({0, 3}));
  EXPECT_EQ(gathered[1], bytes({2, 1}));  // in the subgroup's rank order
  EXPECT_EQ(gathered[2], bytes({2, 1}));
}

TEST(SubgroupCommunicator, AWorkerOutsideItsMembersIsRefused) {
  const auto errors = test::run_local_workers(2, kTimeout, [&](int r, LocalCommunicator& comm) {
    if (r == 0) SubgroupCommunicator sub(comm, {1});
  });
  EXPECT_NE(errors[0].find("subgroup 1: worker 0 is not one of its members"), std::string::npos) << errors[0];
}

}  // namespace
}  // namespace ptrain
