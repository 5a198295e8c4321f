#pragma once
// What validation found wrong with a run plan: every problem at once, each
// naming the plan's field ("codec.density", "run.workers"), not a flag. The
// CLI renames the fields to its flags (cli/plan_flags.hpp) before printing.
#include <functional>
#include <string>
#include <vector>

namespace ptrain {

struct Problem {
  std::string field;    // e.g. "strategy.backup"; empty for the plan as a whole
  std::string message;  // what is wrong, without the field: "must be at least 1 (got 0)"
};

class Problems {
 public:
  void add(std::string field, std::string message) { list_.push_back({std::move(field), std::move(message)}); }
  bool empty() const { return list_.empty(); }
  const std::vector<Problem>& list() const { return list_; }

  // All of them on one line: "run.workers must be at least 1 (got 0); codec.density ...".
  // `rename` turns a field into what the reader knows it by (a flag).
  std::string joined(const std::function<std::string(const std::string&)>& rename = {}) const;
  // Throws ptrain::Error with joined() when there is any.
  void throw_if_any(const std::function<std::string(const std::string&)>& rename = {}) const;

 private:
  std::vector<Problem> list_;
};

}  // namespace ptrain
