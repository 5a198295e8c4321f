#include "core/problems.hpp"

#include <cstddef>

#include "core/error.hpp"
#include "core/printable.hpp"

namespace ptrain {

std::string Problems::joined(const std::function<std::string(const std::string&)>& rename) const {
  // A plan file with a million unknown keys has a million problems: the
  // first few say what is wrong, the count says how much.
  constexpr size_t kShown = 20;
  std::string out;
  for (const Problem& p : list_) {
    if (&p - list_.data() == static_cast<std::ptrdiff_t>(kShown)) {
      out += "; and " + std::to_string(list_.size() - kShown) + " more";
      break;
    }
    if (!out.empty()) out += "; ";
    const std::string field = rename ? rename(p.field) : p.field;
    out += field.empty() ? p.message : field + (p.message.starts_with(":") ? "" : " ") + p.message;
  }
  return on_one_line(out);  // names and values from a plan file may hold newlines
}

void Problems::throw_if_any(const std::function<std::string(const std::string&)>& rename) const {
  if (!empty()) throw Error(joined(rename));
}

}  // namespace ptrain
