#include "core/problems.hpp"

#include "core/error.hpp"
#include "core/printable.hpp"

namespace ptrain {

std::string Problems::joined(const std::function<std::string(const std::string&)>& rename) const {
  std::string out;
  for (const Problem& p : list_) {
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
