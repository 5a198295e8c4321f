#pragma once
// Helpers for the tests that run as MPI ranks (*_mpi_test.cpp).
#include <mpi.h>

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <memory>
#include <thread>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "comm/hierarchical_communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/worker_links.hpp"
#include "test_support.hpp"

namespace ptrain {

// A communicator with a short timeout, made once every rank has arrived: its
// own setup (a collective under that timeout) must not fail because a loaded
// machine ran one rank late, as a test of the timeout itself then hangs.
inline MpiCommunicator communicator_when_all_arrived(std::chrono::milliseconds timeout) {
  MPI_Barrier(MPI_COMM_WORLD);
  return MpiCommunicator(timeout);
}

// Rank 0's scratch directory, named to every rank (one host: one file system).
inline std::string shared_dir(MpiCommunicator& world, const test::ScratchDir* mine) {
  std::string path = mine ? mine->path().string() : std::string();
  uint64_t size = path.size();
  world.broadcast(std::as_writable_bytes(std::span(&size, 1)), 0);
  path.resize(size);
  world.broadcast(std::as_writable_bytes(std::span(path.data(), path.size())), 0);
  return path;
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

// Every rank's string, in rank order, on every rank: a failure that only one
// rank sees is then printed by rank 0, the one rank whose output shows.
// Gathered on a communicator of its own, whose waits answer roll calls
// (comm/mpi_roll_call.hpp): a rank done with its part of a test, waiting here
// for the others, is not named as stopped when one of them times out.
inline std::vector<std::string> from_every_rank(const std::string& mine) {
  MpiCommunicator comm(std::chrono::seconds(60));
  std::vector<std::string> result;
  for (const auto& bytes : comm.allgatherv(std::as_bytes(std::span(mine))))
    result.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return result;
}

// This rank's T threads as workers rank x T + t, each on its own
// communicator across the ranks (over Gloo with `over_gloo`, else MPI) and a
// handle on a shared MPI mesh; runs body(worker, comm) on each and returns
// their errors ("" if none).
inline std::vector<std::string> run_threads(int threads, std::chrono::milliseconds timeout,
                                            const std::function<void(int, HierarchicalCommunicator&)>& body,
                                            bool over_gloo = false) {
  EXPECT_TRUE(MpiRuntime::threads_multiple());
  EXPECT_GE(threads, 2);  // one thread a rank has no thread links
  MPI_Barrier(MPI_COMM_WORLD);  // the setup below is collective, under the timeout
  WorkerLinks links = make_worker_links(threads, over_gloo, timeout);
  auto& across = links.across;
  auto& mesh = links.mesh;
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
