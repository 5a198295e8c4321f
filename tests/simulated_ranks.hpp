#pragma once
// Ranks x threads without MPI: R simulated ranks of T threads each, the
// communicators between the ranks (comm/hierarchical_communicator.hpp) being
// LocalCommunicators over groups of R threads: for each thread index t its
// own across group, and one mesh group that every thread of a rank shares.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/hierarchical_communicator.hpp"
#include "comm/local_group.hpp"

namespace ptrain::test {

class SimulatedRanks {
 public:
  SimulatedRanks(int ranks, int threads, std::chrono::milliseconds timeout) : ranks_(ranks), threads_(threads) {
    for (int r = 0; r < ranks; ++r) rank_groups_.push_back(std::make_shared<LocalGroup>(threads, timeout, r * threads));
    for (int t = 0; t < threads; ++t) across_groups_.push_back(std::make_shared<LocalGroup>(ranks, timeout));
    mesh_group_ = std::make_shared<LocalGroup>(ranks, timeout);
  }
  int ranks() const { return ranks_; }
  int threads() const { return threads_; }

  // One rank's communicators over the ranks, thread by thread (what
  // train_on_threads takes).
  struct Links {
    std::vector<std::unique_ptr<LocalCommunicator>> across, mesh;
    std::vector<Communicator*> across_pointers() const { return pointers(across); }
    std::vector<Communicator*> mesh_pointers() const { return pointers(mesh); }

   private:
    static std::vector<Communicator*> pointers(const std::vector<std::unique_ptr<LocalCommunicator>>& all) {
      std::vector<Communicator*> out;
      for (const auto& c : all) out.push_back(c.get());
      return out;
    }
  };
  Links links(int rank) const {
    Links l;
    for (int t = 0; t < threads_; ++t) {
      l.across.push_back(std::make_unique<LocalCommunicator>(across_groups_[static_cast<size_t>(t)], rank));
      l.mesh.push_back(std::make_unique<LocalCommunicator>(mesh_group_, rank));
    }
    return l;
  }
  std::shared_ptr<LocalGroup> rank_group(int rank) const { return rank_groups_[static_cast<size_t>(rank)]; }

  // Wakes every waiting thread of every simulated rank with `reason`.
  void abort(const std::string& reason) {
    for (auto& g : rank_groups_) g->abort(reason);
    for (auto& g : across_groups_) g->abort(reason);
    mesh_group_->abort(reason);
  }

  // Runs body(worker, comm) for every worker (thread t of rank r is worker
  // r x T + t) on a thread each; returns each worker's error ("" if none). A
  // failure aborts everything, so the others stop waiting; with `abort_all`
  // false each waits out its own timeout, as ranks in their own processes do.
  std::vector<std::string> run(const std::function<void(int, HierarchicalCommunicator&)>& body,
                               bool abort_all = true) {
    const int workers = ranks_ * threads_;
    std::vector<std::string> errors(static_cast<size_t>(workers));
    std::vector<Links> all;
    for (int r = 0; r < ranks_; ++r) all.push_back(links(r));
    std::vector<std::thread> running;
    for (int w = 0; w < workers; ++w)
      running.emplace_back([&, w] {
        const int r = w / threads_, t = w % threads_;
        try {
          const Links& mine = all[static_cast<size_t>(r)];
          HierarchicalCommunicator comm(rank_groups_[static_cast<size_t>(r)], t, *mine.across[static_cast<size_t>(t)],
                                        *mine.mesh[static_cast<size_t>(t)]);
          body(w, comm);
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(w)] = e.what();
          if (abort_all) abort(e.what());
        }
      });
    for (auto& t : running) t.join();
    return errors;
  }

 private:
  int ranks_, threads_;
  std::vector<std::shared_ptr<LocalGroup>> rank_groups_, across_groups_;
  std::shared_ptr<LocalGroup> mesh_group_;
};

}  // namespace ptrain::test
