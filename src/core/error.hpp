#pragma once
// The one exception type ptrain throws for bad input or a failed run.
// Its message names the input and what was wrong; the CLI prints it on one line.
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ptrain {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// What errno says about the system call that just failed, for messages.
inline std::string errno_text() { return std::strerror(errno); }

}  // namespace ptrain
