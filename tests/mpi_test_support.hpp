#pragma once
// Helpers for the tests that run as MPI ranks (*_mpi_test.cpp).
#include <mpi.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "comm/hierarchical_communicator.hpp"
#include "comm/mpi_communicator.hpp"

namespace ptrain {

// A communicator with a short timeout, made once every rank has arrived: its
// own setup (a collective under that timeout) must not fail because a loaded
// machine ran one rank late, as a test of the timeout itself then hangs.
inline MpiCommunicator communicator_when_all_arrived(std::chrono::milliseconds timeout) {
  MPI_Barrier(MPI_COMM_WORLD);
  return MpiCommunicator(timeout);
}

// What `call` threw on this rank ("" if nothing).
inline std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Every rank's string, in rank order, on every rank.
inline std::vector<std::string> from_every_rank(const std::string& mine) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(size)), offsets(static_cast<size_t>(size));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::exclusive_scan(lengths.begin(), lengths.end(), offsets.begin(), 0);
  std::string all(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                 MPI_COMM_WORLD);
  std::vector<std::string> result;
  for (int r = 0; r < size; ++r)
    result.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]),
                                static_cast<size_t>(lengths[static_cast<size_t>(r)])));
  return result;
}

// This rank's T threads as workers rank x T + t, each on its own
// communicator across the ranks (from `make_across`: MPI by default) and a
// handle on a shared MPI mesh; runs body(worker, comm) on each and returns
// their errors ("" if none).
inline std::vector<std::string> run_threads(
    int threads, std::chrono::milliseconds timeout,
    const std::function<void(int, HierarchicalCommunicator&)>& body,
    const std::function<std::unique_ptr<Communicator>()>& make_across = {}) {
  EXPECT_TRUE(MpiRuntime::threads_multiple());
  MPI_Barrier(MPI_COMM_WORLD);  // the setup below is collective, under the timeout
  std::vector<std::unique_ptr<Communicator>> across;
  std::vector<std::unique_ptr<MpiCommunicator>> mesh;
  for (int t = 0; t < threads; ++t) {
    across.push_back(make_across ? make_across() : std::make_unique<MpiCommunicator>(timeout));
    mesh.push_back(t == 0 ? std::make_unique<MpiCommunicator>(timeout) : mesh.front()->share());
  }
  const int rank = across.front()->rank();
  auto group = std::make_shared<LocalGroup>(threads, timeout, rank * threads);
  std::vector<std::string> errors(static_cast<size_t>(threads));
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&, t] {
      try {
        HierarchicalCommunicator comm(group, t, *across[static_cast<size_t>(t)], *mesh[static_cast<size_t>(t)]);
        body(rank * threads + t, comm);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(t)] = e.what();
        group->abort(e.what());
        for (auto& c : across) c->interrupt(e.what());
        for (auto& c : mesh) c->interrupt(e.what());
      }
    });
  for (auto& t : running) t.join();
  return errors;
}

}  // namespace ptrain
