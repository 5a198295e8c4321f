#pragma once
// Runs a test body on several workers as threads of one LocalGroup.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/local_group.hpp"

namespace ptrain::test {

// Runs body(rank, comm) on `size` threads; returns each worker's error message
// ("" if none). A worker that fails aborts the group with its message, so the
// others stop waiting instead of timing out.
inline std::vector<std::string> run_local_workers(int size, std::chrono::milliseconds timeout,
                                                  const std::function<void(int, LocalCommunicator&)>& body) {
  auto group = std::make_shared<LocalGroup>(size, timeout);
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      LocalCommunicator comm(group, r);
      try {
        body(r, comm);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
        group->abort(e.what());
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace ptrain::test
