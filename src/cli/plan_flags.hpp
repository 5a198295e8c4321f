#pragma once
// The one place where the plan's fields meet command-line flags. Every field
// of every registered model, data set, optimizer, strategy and codec becomes
// a flag (--<field>, codec fields --<codec>-<field>, booleans also --no-<field>);
// --model, --data-set, --optimizer, --strategy and --compress choose the kinds.
// A flag for a field the chosen kind does not have is refused, naming the
// kinds that have it. --help is generated from the registries, with each
// field's true default.
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/problems.hpp"
#include "plan/run_plan.hpp"

namespace ptrain {

class PlanFlags {
 public:
  // The strategies a command offers (ptrain shm: the shared-memory ones).
  using StrategyFilter = std::function<bool(const StrategyChoice&)>;
  struct Scope {
    RunPlan defaults;                  // the plan the command starts from: --help shows its values
    StrategyFilter strategies;         // empty: every strategy
    std::vector<std::string> except;   // flags the command defines its own way (ptrain sweep's lists)
  };
  // Adds to `cmd` the flag of every field the scope's strategies can use: a
  // strategy field none of them has, a codec's when none compresses, a run
  // field none reads (--time-limit, --straggler, ...) is not offered.
  explicit PlanFlags(CLI::App& cmd, const Scope& scope = {});

  // Only the flags that choose a data set and name its test set (ptrain
  // eval): --data-set and the data sets' own fields but those of the training
  // set (train_*); apply() then sets plan.data.
  static std::unique_ptr<PlanFlags> test_data(CLI::App& cmd);

  // The plan: `base` (the defaults or a --config file) with the flags given on
  // the command line applied in order. Problems name the flags. With
  // `other_strategies_fields`, a strategy field the plan's strategy lacks is
  // passed over instead of refused (a sweep over strategies).
  RunPlan apply(RunPlan base, Problems& problems, bool other_strategies_fields = false) const;

  // The flag a plan field is known by here ("codec.density" -> "--dgc-density").
  static std::string flag_of(const std::string& field, const RunPlan& plan);
  // Whether "section.name" is a field of the plan's chosen kinds (not, say, a
  // file name such as model.pt).
  static bool is_field(const std::string& field, const RunPlan& plan);

  // Every flag name, for typo suggestions.
  const std::vector<std::string>& names() const { return names_; }

 private:
  // The flags `keep` accepts, by (flag, section, whether it is a kind's own field).
  using Keep = std::function<bool(const std::string& flag, const std::string& section, bool kind_field)>;
  PlanFlags(CLI::App& cmd, const Keep& keep, const RunPlan& defaults, const StrategyFilter& offered);

  std::vector<std::pair<std::string, std::string>> given_;  // (flag, text), in command-line order
  std::vector<std::string> names_;
};

}  // namespace ptrain
