// Worker threads inside MPI ranks (comm/hierarchical_communicator.hpp), as
// many ranks as mpirun started, 2 and 3 threads each: every collective and
// point-to-point between any two workers, over MPI with MPI_THREAD_MULTIPLE.
// Under mpi_ranks_2 this is the 2 ranks x 2 threads case.
#include <fmt/format.h>
#include <gtest/gtest.h>


#include "comm/allreduce_algorithms.hpp"
#include "comm/hierarchical_communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "core/half.hpp"
#include "core/rng.hpp"
#include "mpi_test_support.hpp"

namespace ptrain {
namespace {

using std::chrono::milliseconds;

std::vector<float> worker_data(int worker, size_t n) {
  Rng rng(7000 + static_cast<uint64_t>(worker));
  std::vector<float> v(n);
  for (auto& x : v) x = rng.uniform() * 2 - 1;
  return v;
}

float integer_value(int worker, size_t i) { return static_cast<float>((i * 5 + static_cast<size_t>(worker) * 3) % 13); }

std::vector<float> integer_data(int worker, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = integer_value(worker, i);
  return v;
}

class HierarchicalMpi : public ::testing::TestWithParam<int> {};  // threads per rank

TEST_P(HierarchicalMpi, EveryAlgorithmSumsExactlyOnEveryWorker) {
  const int threads = GetParam();
  for (AllreduceAlgorithm algorithm :
       {AllreduceAlgorithm::Native, AllreduceAlgorithm::Ring, AllreduceAlgorithm::HalvingDoubling,
        AllreduceAlgorithm::Tree, AllreduceAlgorithm::Hierarchical}) {
    const auto errors = run_threads(threads, milliseconds(60000), [&](int w, HierarchicalCommunicator& comm) {
      for (size_t n : {size_t{0}, size_t{7}, size_t{(1 << 18) + 3}}) {
        auto v = integer_data(w, n);
        comm.allreduce(v, algorithm);
        for (size_t i = 0; i < n; ++i) {
          float exact = 0;
          for (int k = 0; k < comm.size(); ++k) exact += integer_value(k, i);
          if (v[i] != exact)
            throw Error(fmt::format("{}: worker {} has {} at {} of {}, not {}", to_string(algorithm), w, v[i], i, n,
                                    exact));
        }
      }
    });
    for (const auto& e : errors) EXPECT_EQ(e, "") << to_string(algorithm);
  }
}

// Hierarchical's bits: this rank's sum in thread order, then the ring between
// the ranks on each thread's slice (over a plain MPI communicator here), on
// every worker.
TEST_P(HierarchicalMpi, HierarchicalIsEachRanksSumThenTheRing) {
  const int threads = GetParam();
  const size_t n = 200003;
  MPI_Barrier(MPI_COMM_WORLD);
  MpiCommunicator ranks(std::chrono::seconds(60));
  std::vector<float> expected = worker_data(ranks.rank() * threads, n);
  for (int t = 1; t < threads; ++t) {
    const auto v = worker_data(ranks.rank() * threads + t, n);
    for (size_t i = 0; i < n; ++i) expected[i] += v[i];
  }
  auto by_slices = [&](auto& all, auto ring) {  // the ring between the ranks on each thread's slice
    for (int t = 0; t < threads; ++t) {
      const size_t lo = slice_begin(n, t, threads), hi = slice_begin(n, t + 1, threads);
      ring(ranks, std::span(all).subspan(lo, hi - lo));
    }
  };
  by_slices(expected, [](Communicator& c, std::span<float> s) { ring_allreduce(c, s); });
  std::vector<uint16_t> expected_halves(n);
  {
    std::vector<float> sum(n);
    std::vector<uint16_t> h(n);
    for (int t = 0; t < threads; ++t) {
      floats_to_halves_saturating(worker_data(ranks.rank() * threads + t, n), h);
      if (t == 0)
        halves_to_floats(h, sum);
      else
        add_halves_to_floats(h, sum);
    }
    floats_to_halves_saturating(sum, expected_halves);
    by_slices(expected_halves, [](Communicator& c, std::span<uint16_t> s) { ring_allreduce_half(c, s); });
  }
  const auto errors = run_threads(threads, milliseconds(60000), [&](int w, HierarchicalCommunicator& comm) {
    auto v = worker_data(w, n);
    comm.allreduce(v, AllreduceAlgorithm::Hierarchical);
    if (v != expected) throw Error(fmt::format("worker {}: not the two-level sum's bits", w));
    std::vector<uint16_t> h(n);
    floats_to_halves_saturating(worker_data(w, n), h);
    comm.allreduce_half(h, AllreduceAlgorithm::Hierarchical);
    if (h != expected_halves) throw Error(fmt::format("worker {}: not the two-level half sum's bits", w));
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

TEST_P(HierarchicalMpi, BroadcastAllgathervAndPointToPointReachEveryWorker) {
  const int threads = GetParam();
  auto bytes_of = [](int w, size_t n) {
    std::vector<std::byte> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = std::byte(static_cast<uint8_t>(w * 29 + static_cast<int>(i)));
    return b;
  };
  const auto errors = run_threads(threads, milliseconds(60000), [&](int w, HierarchicalCommunicator& comm) {
    const int workers = comm.size();
    for (int root : {0, workers - 1, workers / 2}) {
      auto b = bytes_of(w, 100001);
      comm.broadcast(b, root);
      if (b != bytes_of(root, 100001)) throw Error(fmt::format("worker {}: wrong broadcast from {}", w, root));
    }
    const auto all = comm.allgatherv(bytes_of(w, static_cast<size_t>(w % 3 == 1 ? 0 : 5 * w + 1)));
    for (int from = 0; from < workers; ++from)
      if (all[static_cast<size_t>(from)] != bytes_of(from, static_cast<size_t>(from % 3 == 1 ? 0 : 5 * from + 1)))
        throw Error(fmt::format("worker {}: wrong allgatherv part of {}", w, from));
    // Shift k: to w + k, from w - k, for every k: within the rank, across,
    // between other threads, both ways at once.
    for (int k = 1; k < workers; ++k) {
      const int to = (w + k) % workers, from = (w + workers - k) % workers;
      std::vector<std::byte> in(70001);
      comm.sendrecv(to, bytes_of(w * 100 + to, in.size()), from, in, 1);
      if (in != bytes_of(from * 100 + w, in.size()))
        throw Error(fmt::format("worker {}: wrong message from {}", w, from));
    }
    comm.barrier();
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

TEST_P(HierarchicalMpi, AnotherSizeOnAnotherRankIsNamed) {
  const int threads = GetParam();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  const auto errors = run_threads(threads, milliseconds(60000), [&](int w, HierarchicalCommunicator& comm) {
    std::vector<float> v(w < threads ? 9 : 4, 1.0f);  // rank 0's threads bring 9
    comm.allreduce(v, AllreduceAlgorithm::Hierarchical);
  });
  for (const auto& e : errors) {
    EXPECT_NE(e.find("hierarchical allreduce: worker "), std::string::npos) << e;
    EXPECT_NE(e.find(" floats but worker "), std::string::npos) << e;
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, HierarchicalMpi, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "PerRank"; });

}  // namespace
}  // namespace ptrain
