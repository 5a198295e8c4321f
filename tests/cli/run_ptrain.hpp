#pragma once
// Runs the ptrain executable as a user would, capturing its exit code and output.
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace ptrain::test {

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

inline Outcome run_ptrain_with_env(const std::string& env, const std::string& args) {
  ScratchDir dir;
  const std::string command =
      env + " " + std::string(PTRAIN_EXE) + " " + args + " >" + dir.file("out") + " 2>" + dir.file("err");
  const int status = std::system(command.c_str());
  Outcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& p) {
    auto bytes = read_bytes(p);
    return std::string(bytes.begin(), bytes.end());
  };
  o.out = slurp(dir.file("out"));
  o.err = slurp(dir.file("err"));
  return o;
}

inline Outcome run_ptrain(const std::string& args) { return run_ptrain_with_env("", args); }

// mpirun as root (the CI's user) with more ranks than cores.
inline const char* kMpirun = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe";

inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(std::ifstream(path)); }

inline bool python_has_torch() { return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0; }

inline size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// Each command line (args, a part of the expected message) fails with a non-zero
// exit and a one-line error that contains the expected text.
inline void expect_one_line_errors(const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [args, expected] : cases) {
    const Outcome o = run_ptrain(args);
    EXPECT_NE(o.exit_code, 0) << args;
    EXPECT_NE(o.err.find(expected), std::string::npos) << args << " gave: " << o.err;
    EXPECT_EQ(lines(o.err), 1u) << args << " gave: " << o.err;
  }
}

}  // namespace ptrain::test
