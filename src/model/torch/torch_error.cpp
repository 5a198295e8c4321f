#include "model/torch/torch_error.hpp"

#include <string_view>

namespace ptrain {

std::string torch_error_line(const c10::Error& e) { return first_line(e.what_without_backtrace()); }

std::string first_line(std::string_view text) {
  // The TorchScript interpreter ends its traceback with the Python error's line.
  constexpr std::string_view kScriptError = "RuntimeError: ";
  if (const auto at = text.rfind(kScriptError); at != std::string_view::npos)
    text.remove_prefix(at + kScriptError.size());
  while (!text.empty() && (text.front() == '\n' || text.front() == ' ')) text.remove_prefix(1);
  text = text.substr(0, text.find('\n'));
  return text.empty() ? std::string("LibTorch error") : std::string(text);
}

}  // namespace ptrain
