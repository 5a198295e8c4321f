#pragma once
// LibTorch's errors carry a C++ stack trace and, from TorchScript, the
// script's traceback over many lines; ptrain's errors are one line
// (DESIGN.md, "Conventions"). This keeps the line that says what was wrong.
#include <c10/util/Exception.h>

#include <string>
#include <string_view>

namespace ptrain {

// "mat1 and mat2 shapes cannot be multiplied (8x784 and 10x128)"
std::string torch_error_line(const c10::Error& e);
// The same for any error text: its TorchScript error line, or its first line.
std::string first_line(std::string_view text);

}  // namespace ptrain
