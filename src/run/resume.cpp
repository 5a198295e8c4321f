#include "run/resume.hpp"

#include <fmt/format.h>

#include <set>

#include "core/error.hpp"
#include "plan/plan_json.hpp"

namespace ptrain {

FoundCheckpoint newest_checkpoint(const std::string& dir, const std::function<void(const std::string&)>& skipped) {
  int damaged = 0;
  const CheckpointStore store = CheckpointStore::existing(dir);
  auto found = store.newest([&](const std::string& why) {
    ++damaged;
    if (skipped) skipped(why);
  });
  if (!found)
    throw Error(damaged > 0 ? fmt::format("checkpoint directory {}: all {} checkpoints there are damaged", dir, damaged)
                            : fmt::format("checkpoint directory {}: no checkpoint there", dir));
  return *found;
}

RunPlan checkpoint_plan(const FoundCheckpoint& found) {
  Problems problems;
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(found.plan_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("checkpoint {}: its plan is not JSON ({})", found.manifest, e.what()));
  }
  RunPlan plan = plan_from_json(json, RunPlan{}, "checkpoint " + found.manifest, problems);
  problems.throw_if_any();
  return plan;
}

void check_resume(const RunPlan& saved, const RunPlan& now, Problems& problems) {
  // What the state does not depend on.
  static const std::set<std::string> free_fields = {
      "run.epochs",         "run.max_steps",          "run.time_limit",     "run.log_every",
      "run.comm_timeout",   "run.threads_per_worker", "run.placement",      "run.topology",       "run.backend",
      "run.checkpoint_dir", "run.checkpoint_every",   "run.checkpoint_keep",  "run.save_model",
      "run.on_diverge",     "run.rollback_lr_scale",  "run.max_rollbacks",    "run.max_restarts",
      "run.metrics",        "run.timeline",
      // A run resumed after it diverged may go on with a smaller step, and
      // one resumed to train longer with another schedule.
      "optimizer.lr",       "run.lr_decay",           "run.lr_milestones",  "run.lr_gamma"};
  const nlohmann::json a = plan_to_json(saved), b = plan_to_json(now);
  for (const auto& [section, fields] : a.items()) {
    if (!b.contains(section)) continue;
    for (const auto& [field, value] : fields.items()) {
      const std::string name = section + "." + field;
      if (free_fields.contains(name)) continue;
      const auto other = b[section].contains(field) ? b[section][field] : nlohmann::json();
      if (value == other) continue;
      auto text = [](const nlohmann::json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); };
      problems.add(name, fmt::format(": the checkpoint's is {}, this run's {} (a resumed run keeps its state's "
                                     "settings)",
                                     text(value), other.is_null() ? "absent" : text(other)));
      if (field == "name") break;  // another kind: its other fields say nothing more
    }
  }
}

}  // namespace ptrain
