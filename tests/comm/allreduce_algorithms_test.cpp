// The algorithms' chunking, on the local backend: sizes around chunk
// boundaries, where neighbouring segments need different numbers of chunks.
#include "comm/allreduce_algorithms.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "comm/local_group.hpp"

namespace ptrain {
namespace {

TEST(RingAllreduce, SegmentsWithDifferentChunkCountsStillPair) {
  constexpr size_t kChunk = 4;
  for (int n = 2; n <= 8; ++n)
    for (size_t count = 0; count <= 5 * kChunk * static_cast<size_t>(n); ++count) {
      auto group = std::make_shared<LocalGroup>(n, std::chrono::seconds(20));
      std::vector<std::vector<float>> results(static_cast<size_t>(n));
      std::vector<std::string> errors(static_cast<size_t>(n));
      std::vector<std::thread> threads;
      for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
          try {
            LocalCommunicator comm(group, r);
            std::vector<float> data(count);
            for (size_t i = 0; i < count; ++i)
              data[i] = static_cast<float>((i * 7 + static_cast<size_t>(r)) % 10);
            ring_allreduce(comm, data, kChunk);
            results[static_cast<size_t>(r)] = std::move(data);
          } catch (const std::exception& e) {
            errors[static_cast<size_t>(r)] = e.what();
            group->abort(e.what());
          }
        });
      for (auto& t : threads) t.join();
      for (int r = 0; r < n; ++r) {
        ASSERT_EQ(errors[static_cast<size_t>(r)], "") << n << " workers, " << count << " floats";
        for (size_t i = 0; i < count; ++i) {
          float sum = 0;
          for (int k = 0; k < n; ++k) sum += static_cast<float>((i * 7 + static_cast<size_t>(k)) % 10);
          ASSERT_EQ(results[static_cast<size_t>(r)][i], sum)
              << n << " workers, " << count << " floats, i " << i;
        }
      }
    }
}

}  // namespace
}  // namespace ptrain
