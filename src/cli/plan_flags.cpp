#include "cli/plan_flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include "cli/path_option.hpp"

namespace ptrain {

namespace {

std::string dashed(std::string_view field) {
  std::string out(field);
  for (char& c : out)
    if (c == '_') c = '-';
  return out;
}

// The flag of `field` of the kind `kind` in plan section `section`.
std::string flag_for(std::string_view section, std::string_view kind, std::string_view field) {
  if (section == "data" && field == "dir") return "--data";
  if (section == "run" && field == "save_model") return "--save";
  if (section == "run" && field.starts_with("straggler_")) return "--straggler";
  if (section == "codec") return "--" + std::string(kind) + "-" + dashed(field);
  if (section == "pull") return "--pull-" + std::string(kind) + "-" + dashed(field);
  return "--" + dashed(field);
}

// The flags that choose a section's kind.
struct NameFlag {
  const char* flag;
  const char* section;
};
constexpr NameFlag kNameFlags[] = {{"--model", "model"},         {"--data-set", "data"},
                                   {"--optimizer", "optimizer"}, {"--strategy", "strategy"},
                                   {"--compress", "codec"},      {"--pull", "pull"}};

// One flag: the fields it sets, by kind.
struct FlagInfo {
  std::string section;
  std::string help;
  std::string kind;  // what it takes: INT, NUMBER, a|b, ...
  bool is_bool = false;
  std::vector<std::pair<std::string, std::string>> defaults;  // (kind name, default text)
  size_t kinds_in_section = 0;
  std::string applies_to;  // a run field only some strategies read: "strategies that stop on time: ssp, async"
};

template <class Registry, class F>
void for_each_kind(F&& f) {
  for (auto name : Registry::names()) {
    auto choice = *Registry::make(name);
    std::visit(f, choice);
  }
}

// Each kind the command offers, as the defaults plan has it where that plan
// chose it (so --help shows ptrain shm's defaults in ptrain shm).
template <class Registry, class Offered, class F>
void for_each_offered_kind(const typename Registry::Choice& chosen, const Offered& offered, F&& f) {
  for (auto name : Registry::names()) {
    auto choice = name == Registry::name_of(chosen) ? chosen : *Registry::make(name);
    if (offered(choice)) std::visit(f, choice);
  }
}

bool offers_all(const StrategyChoice&) { return true; }

template <class Options>
void collect(std::string_view section, std::string_view kind, const Options& o, size_t kinds,
             std::map<std::string, FlagInfo>& flags) {
  Options::fields(o, [&](const char* field, const auto& value, const char* help, const Range&) {
    using T = std::decay_t<decltype(value)>;
    const std::string flag = flag_for(section, kind, field);
    FlagInfo& info = flags[flag];
    info.section = section;
    info.help = help;
    info.kind = field_kind<T>();
    info.is_bool = std::is_same_v<T, bool>;
    info.defaults.emplace_back(kind, field_text(value));
    info.kinds_in_section = kinds;
  });
}

// The offered strategies that have a trait, by name ("ps-backup, ssp, async").
std::string offered_with(const PlanFlags::StrategyFilter& offered, bool (*trait)(const StrategyChoice&)) {
  std::string out;
  for (auto name : StrategyRegistry::names()) {
    const auto choice = *StrategyRegistry::make(name);
    if (offered(choice) && trait(choice)) out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out;
}

bool trainer_strategy(const StrategyChoice& s) { return !shared_memory_config(s); }

// The run fields only some strategies read: the trait that says which, and the words for --help.
struct RunFieldTrait {
  const char* flag;
  bool (*trait)(const StrategyChoice&);
  const char* who;
};
constexpr RunFieldTrait kRunFieldTraits[] = {
    {"--time-limit", stops_on_time, "strategies that stop on time"},
    {"--local-workers", runs_local_workers, "worker threads inside MPI ranks"},
    {"--transport", distributed, "strategies that run as MPI ranks"},
    {"--backend", distributed, "strategies that run as MPI ranks"},
    {"--straggler", trainer_strategy, "the trainer's strategies"},
    {"--log-every", trainer_strategy, "the trainer's strategies"},
    {"--microbatches", trainer_strategy, "the trainer's strategies"},
    {"--memory-limit", trainer_strategy, "the trainer's strategies"},
};

// Every flag the command offers, with the defaults of `defaults`. A run field
// no offered strategy reads is left out, and one only some read says which.
std::map<std::string, FlagInfo> all_flags(const RunPlan& defaults = {},
                                          const PlanFlags::StrategyFilter& offered = offers_all) {
  std::map<std::string, FlagInfo> flags;
  auto each = [&]<class Registry>(const char* section, const typename Registry::Choice& chosen, auto keep) {
    size_t kinds = 0;
    for_each_offered_kind<Registry>(chosen, keep, [&](const auto&) { ++kinds; });
    for_each_offered_kind<Registry>(chosen, keep, [&](const auto& o) {
      collect(section, std::decay_t<decltype(o)>::name, o, kinds, flags);
    });
  };
  auto any = [](const auto&) { return true; };
  each.template operator()<ModelRegistry>("model", defaults.model, any);
  each.template operator()<DataRegistry>("data", defaults.data, any);
  each.template operator()<OptimizerRegistry>("optimizer", defaults.optimizer, any);
  each.template operator()<StrategyRegistry>("strategy", defaults.strategy, offered);
  if (!offered_with(offered, takes_codec).empty())
    each.template operator()<CodecRegistry>("codec", defaults.codec, any);
  if (!offered_with(offered, has_servers).empty())
    each.template operator()<PullCodecRegistry>("pull", defaults.pull, any);
  collect("data", "", defaults.data_controls, 0, flags);
  collect("run", "", defaults.run, 0, flags);
  flags.erase("--straggler");  // two fields behind one flag: added by hand
  for (const auto& [flag, trait, who] : kRunFieldTraits) {
    auto it = flags.find(flag);
    if (it == flags.end()) continue;
    const std::string which = offered_with(offered, trait);
    if (which.empty()) flags.erase(it);
    else if (which != offered_with(offered, offers_all)) it->second.applies_to = std::string(who) + ": " + which;
  }
  return flags;
}

// "[adam: 0.001; sgd, momentum, nesterov: 0.01]" or "[128]"; "(ssp, async)" when not every kind has it.
std::string describe(const FlagInfo& info) {
  std::vector<std::pair<std::string, std::string>> by_default;  // (default, kinds)
  for (const auto& [kind, text] : info.defaults) {
    auto it = std::find_if(by_default.begin(), by_default.end(), [&](const auto& d) { return d.first == text; });
    if (it == by_default.end()) by_default.emplace_back(text, kind);
    else it->second += ", " + kind;
  }
  std::string out = info.help;
  if (by_default.size() == 1) {
    out += " [default: " + (by_default[0].first.empty() ? "none" : by_default[0].first) + "]";
  } else {
    std::string parts;
    for (const auto& [text, kinds] : by_default) parts += (parts.empty() ? "" : "; ") + kinds + ": " + text;
    out += " [default " + parts + "]";
  }
  if (info.kinds_in_section > 0 && info.defaults.size() < info.kinds_in_section) {
    std::string kinds;
    for (const auto& [kind, text] : info.defaults) kinds += (kinds.empty() ? "" : ", ") + kind;
    out += " (" + std::string(info.section == "codec" ? "compress " : info.section + " ") + kinds + ")";
  }
  if (!info.applies_to.empty()) out += " (" + info.applies_to + ")";
  return out;
}

const char* group_of(const std::string& section) {
  if (section == "model") return "Model";
  if (section == "data") return "Data";
  if (section == "optimizer") return "Optimizer";
  if (section == "strategy") return "Strategy";
  if (section == "codec" || section == "pull") return "Compression";
  return "Run";
}

template <class Registry, class Offered>
std::string kinds_help(const char* what, const Offered& offered) {
  std::string out = std::string(what) + ":";
  for_each_offered_kind<Registry>(*Registry::make(Registry::names().front()), offered, [&](const auto& o) {
    using O = std::decay_t<decltype(o)>;
    out += "\n  " + std::string(O::name) + ": " + std::string(O::summary);
  });
  return out;
}

// --model path/to/model.pt: a path, not a registered name, is a module scripted in Python.
bool names_a_file(const std::string& text) {
  return !ModelRegistry::make(text) && (text.find('/') != std::string::npos || text.ends_with(".pt"));
}

template <class Registry>
void set_kind(typename Registry::Choice& choice, const std::string& flag, const std::string& name, const char* what,
              Problems& problems) {
  if (name == Registry::name_of(choice)) return;  // keep its fields (from --config)
  auto made = Registry::make(name);
  if (!made) return problems.add(flag, ": " + Registry::unknown(what, name));
  choice = *made;
}

// A flag's text into a field. An empty text is refused: for a path it means
// none, which leaving the flag out says (--save "$OUT" with OUT unset saved
// nothing, silently). (CLI11 refuses it first: cli/path_option.hpp.)
template <class T>
void set_from_flag(T& value, const std::string& flag, const std::string& text, Problems& problems) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (text.empty()) return problems.add(flag, ": an empty value");
  }
  if (auto why = field_from_text(value, text)) problems.add(flag, ": " + *why);
}

// Sets the field of `o` whose flag is `flag`; false when `o` has no such field.
template <class Options>
bool set_field(Options& o, std::string_view section, const std::string& flag, const std::string& text,
               Problems& problems) {
  bool found = false;
  Options::fields(o, [&](const char* field, auto& value, const char*, const Range&) {
    if (found || flag_for(section, Options::name, field) != flag) return;
    found = true;
    set_from_flag(value, flag, text, problems);
  });
  return found;
}

template <class Options>
bool set_plain_field(Options& o, std::string_view section, const std::string& flag, const std::string& text,
                     Problems& problems) {
  bool found = false;
  Options::fields(o, [&](const char* field, auto& value, const char*, const Range&) {
    if (found || flag_for(section, "", field) != flag) return;
    found = true;
    set_from_flag(value, flag, text, problems);
  });
  return found;
}

template <class Registry>
void set_choice_field(typename Registry::Choice& choice, const char* section, const std::string& flag,
                      const std::string& text, const FlagInfo& info, Problems& problems) {
  const bool found = std::visit([&](auto& o) { return set_field(o, section, flag, text, problems); }, choice);
  if (found) return;
  std::string kinds;
  for (const auto& [kind, d] : info.defaults) kinds += (kinds.empty() ? "" : ", ") + kind;
  problems.add(flag, fmt::format(": {} {} has no such option (it is for {} {})",
                                 std::string_view(section) == "codec" ? "compress" : section,
                                 Registry::name_of(choice), std::string_view(section) == "codec" ? "compress" : section,
                                 kinds));
}

}  // namespace

PlanFlags::PlanFlags(CLI::App& cmd, const Scope& scope)
    : PlanFlags(
          cmd,
          [&](const std::string& flag, const std::string&, bool) {
            return std::find(scope.except.begin(), scope.except.end(), flag) == scope.except.end();
          },
          scope.defaults, scope.strategies ? scope.strategies : StrategyFilter(offers_all)) {}

std::unique_ptr<PlanFlags> PlanFlags::test_data(CLI::App& cmd) {
  return std::unique_ptr<PlanFlags>(new PlanFlags(
      cmd,
      [](const std::string& flag, const std::string& section, bool kind_field) {
        return section == "data" && (flag == "--data-set" || (kind_field && !flag.starts_with("--train-")));
      },
      RunPlan{}, offers_all));
}

PlanFlags::PlanFlags(CLI::App& cmd, const Keep& keep, const RunPlan& defaults, const StrategyFilter& offered) {
  const auto flags = all_flags(defaults, offered);
  const bool codecs = !offered_with(offered, takes_codec).empty();
  const bool pulls = !offered_with(offered, has_servers).empty();
  auto any = [](const auto&) { return true; };
  for (const auto& [flag, section] : kNameFlags) {
    if (!keep(flag, section, false)) continue;
    std::string help;
    const std::string s = section;
    if (s == "codec" && !codecs) continue;  // no offered strategy compresses
    if (s == "pull" && !pulls) continue;    // nor pulls from servers
    if (s == "model")
      help = kinds_help<ModelRegistry>("The model", any) + "\n  a path (model.pt): torchscript with that file";
    if (s == "data") help = kinds_help<DataRegistry>("The data set", any);
    if (s == "optimizer") help = kinds_help<OptimizerRegistry>("The optimizer", any);
    if (s == "strategy") help = kinds_help<StrategyRegistry>("How the workers synchronize", offered);
    if (s == "codec") help = kinds_help<CodecRegistry>("Gradient compression", any);
    if (s == "pull")
      help = kinds_help<PullCodecRegistry>(
          ("What a parameter-server pull sends (" + offered_with(offered, has_servers) + ")").c_str(), any);
    std::string default_name;
    if (s == "model") default_name = ModelRegistry::name_of(defaults.model);
    if (s == "data") default_name = DataRegistry::name_of(defaults.data);
    if (s == "optimizer") default_name = OptimizerRegistry::name_of(defaults.optimizer);
    if (s == "strategy") default_name = StrategyRegistry::name_of(defaults.strategy);
    if (s == "codec") default_name = CodecRegistry::name_of(defaults.codec);
    if (s == "pull") default_name = PullCodecRegistry::name_of(defaults.pull);
    const std::string name = flag;
    cmd.add_option_function<std::string>(
           name, [this, name](const std::string& text) { given_.emplace_back(name, text); },
           help + "\n  [default: " + default_name + "]")
        ->group(group_of(section))
        ->type_name("NAME");
    names_.push_back(name);
  }
  for (const auto& [flag, info] : flags) {
    const std::string name = flag;
    if (!keep(name, info.section, info.kinds_in_section > 0)) continue;
    if (info.is_bool) {
      const std::string negated = "--no-" + name.substr(2);
      // The value CLI11 hands on is the last one given, +1 for a true word and -1 for a false one
      // (cli/strict_options.hpp has refused any other): --overlap=false turns overlap off.
      cmd.add_flag_function(
             name, [this, name](std::int64_t value) { given_.emplace_back(name, value > 0 ? "true" : "false"); },
             describe(info) + " (" + negated + " to turn off)")
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
          ->group(group_of(info.section));
      // Listed with its positive form only, so --help shows each switch once, with its true default.
      cmd.add_flag_function(negated,
                            [this, name](std::int64_t value) { given_.emplace_back(name, value > 0 ? "false" : "true"); })
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
          ->group("");
      names_.push_back(negated);
    } else {
      auto* option = cmd.add_option_function<std::string>(
                         name, [this, name](const std::string& text) { given_.emplace_back(name, text); },
                         describe(info))
                         ->group(group_of(info.section))
                         ->type_name(info.kind);
      // CLI11 passes no empty text on to the function: refused here, not taken as none.
      if (info.kind == "TEXT") option->check(non_empty_path());  // every text field is a path
    }
    names_.push_back(name);
  }
  const std::string stragglers = offered_with(offered, trainer_strategy);
  if (!keep("--straggler", "run", false) || stragglers.empty()) return;
  cmd.add_option_function<std::string>(
         "--straggler", [this](const std::string& text) { given_.emplace_back("--straggler", text); },
         "RANK:FACTOR makes worker RANK compute FACTOR times slower (for experiments) [default: none]" +
             (stragglers == offered_with(offered, offers_all) ? "" : " (the trainer's strategies: " + stragglers + ")"))
      ->group("Run")
      ->type_name("RANK:FACTOR");
  names_.push_back("--straggler");
}

RunPlan PlanFlags::apply(RunPlan plan, Problems& problems, bool other_strategies_fields) const {
  for (const auto& [flag, text] : given_) {
    const bool chooses_kind = std::any_of(std::begin(kNameFlags), std::end(kNameFlags),
                                          [&](const NameFlag& n) { return flag == n.flag; });
    if (chooses_kind && text.empty()) {
      problems.add(flag, ": an empty name");
      continue;
    }
    if (flag == "--model" && names_a_file(text)) plan.model = TorchScriptOptions{text};
    else if (flag == "--model") set_kind<ModelRegistry>(plan.model, flag, text, "model", problems);
    if (flag == "--data-set") set_kind<DataRegistry>(plan.data, flag, text, "data set", problems);
    if (flag == "--optimizer") set_kind<OptimizerRegistry>(plan.optimizer, flag, text, "optimizer", problems);
    if (flag == "--strategy") set_kind<StrategyRegistry>(plan.strategy, flag, text, "strategy", problems);
    if (flag == "--compress") set_kind<CodecRegistry>(plan.codec, flag, text, "codec", problems);
    if (flag == "--pull") set_kind<PullCodecRegistry>(plan.pull, flag, text, "pull codec", problems);
  }
  // A data set chosen without a model brings its own (bible: lstm).
  const auto given = [&](const char* name) {
    return std::any_of(given_.begin(), given_.end(), [&](const auto& g) { return g.first == name; });
  };
  if (given("--data-set") && !given("--model"))
    if (const auto kind = std::visit([](const auto& d) { return default_model_of(d); }, plan.data))
      plan.model = *ModelRegistry::make(std::string(*kind));
  const auto flags = all_flags();
  for (const auto& [flag, text] : given_) {
    if (flag == "--straggler") {
      const size_t colon = text.find(':');
      int rank = -1;
      double factor = 0;
      if (colon == std::string::npos || field_from_text(rank, text.substr(0, colon)) ||
          field_from_text(factor, text.substr(colon + 1)) || rank < 0 || !(factor >= 1) || !std::isfinite(factor)) {
        problems.add(flag, "'" + text + "': expected RANK:FACTOR with FACTOR >= 1, e.g. 3:4");
        continue;
      }
      plan.run.straggler_rank = rank;
      plan.run.straggler_factor = factor;
      continue;
    }
    auto it = flags.find(flag);
    if (it == flags.end()) continue;  // a name flag
    const FlagInfo& info = it->second;
    const std::string& section = info.section;
    if (section == "run") set_plain_field(plan.run, "run", flag, text, problems);
    else if (section == "data" && set_plain_field(plan.data_controls, "data", flag, text, problems)) continue;
    else if (section == "data") set_choice_field<DataRegistry>(plan.data, "data", flag, text, info, problems);
    else if (section == "model") set_choice_field<ModelRegistry>(plan.model, "model", flag, text, info, problems);
    else if (section == "optimizer")
      set_choice_field<OptimizerRegistry>(plan.optimizer, "optimizer", flag, text, info, problems);
    else if (section == "strategy" && other_strategies_fields)
      std::visit([&](auto& o) { set_field(o, "strategy", flag, text, problems); }, plan.strategy);
    else if (section == "strategy")
      set_choice_field<StrategyRegistry>(plan.strategy, "strategy", flag, text, info, problems);
    else if (section == "codec") set_choice_field<CodecRegistry>(plan.codec, "codec", flag, text, info, problems);
    else if (section == "pull") set_choice_field<PullCodecRegistry>(plan.pull, "pull", flag, text, info, problems);
  }
  return plan;
}

bool PlanFlags::is_field(const std::string& field, const RunPlan& plan) {
  const size_t dot = field.find('.');
  if (dot == std::string::npos) return false;
  const std::string section = field.substr(0, dot), name = field.substr(dot + 1);
  if (name == "name") return true;
  bool found = false;
  auto look = [&](const auto& options) {
    std::decay_t<decltype(options)>::fields(options, [&](const char* f, const auto&, const char*, const Range&) {
      found = found || name == f;
    });
  };
  auto look_in = [&](const auto& choice) { std::visit(look, choice); };
  if (section == "model") look_in(plan.model);
  if (section == "data") look_in(plan.data), look(plan.data_controls);
  if (section == "optimizer") look_in(plan.optimizer);
  if (section == "strategy") look_in(plan.strategy);
  if (section == "codec") look_in(plan.codec);
  if (section == "pull") look_in(plan.pull);
  if (section == "run") look(plan.run);
  return found;
}

std::string PlanFlags::flag_of(const std::string& field, const RunPlan& plan) {
  const size_t dot = field.find('.');
  const std::string section = field.substr(0, dot);
  if (dot == std::string::npos) {
    for (const auto& [flag, s] : kNameFlags)
      if (section == s) return flag;
    return field;
  }
  const std::string name = field.substr(dot + 1);
  std::string kind;
  if (section == "model") kind = ModelRegistry::name_of(plan.model);
  if (section == "data") kind = DataRegistry::name_of(plan.data);
  if (section == "optimizer") kind = OptimizerRegistry::name_of(plan.optimizer);
  if (section == "strategy") kind = StrategyRegistry::name_of(plan.strategy);
  if (section == "codec") kind = CodecRegistry::name_of(plan.codec);
  if (section == "pull") kind = PullCodecRegistry::name_of(plan.pull);
  if (name == "name") return flag_of(section, plan);
  return flag_for(section, kind, name);
}

}  // namespace ptrain
