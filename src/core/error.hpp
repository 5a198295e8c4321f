#pragma once
// The one exception type ptrain throws for bad input or a failed run.
// Its message names the input and what was wrong; the CLI prints it on one line.
#include <stdexcept>
#include <string>

namespace ptrain {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ptrain
