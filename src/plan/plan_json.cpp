#include "plan/plan_json.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "core/input_file.hpp"

namespace ptrain {

namespace {

using nlohmann::json;

template <class T>
json field_json(const T& v) {
  if constexpr (NamedEnum<T> || std::is_same_v<T, ByteSize> || std::is_same_v<T, Cadence>) return field_text(v);
  // A float as its shortest text (0.001, not 0.0010000000474974513): read back, it is the same float.
  else if constexpr (std::is_same_v<T, float>) return std::isfinite(v) ? json(std::stod(field_text(v))) : json(v);
  else return v;
}

template <class Options>
void write_fields(const Options& o, json& out) {
  Options::fields(o, [&](const char* name, const auto& value, const char*, const Range&) { out[name] = field_json(value); });
}

template <class Choice>
json choice_json(const Choice& c) {
  return std::visit(
      [](const auto& o) {
        json out = {{"name", std::string(std::decay_t<decltype(o)>::name)}};
        write_fields(o, out);
        return out;
      },
      c);
}

// Reads one field from JSON; a wrong type is a problem.
template <class T>
void read_value(const json& j, T& v, const std::string& path, Problems& problems) {
  auto wrong = [&](const char* expected) { problems.add(path, fmt::format(": expected {}, got {}", expected, j.dump())); };
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) return wrong("true or false");
    v = j.get<bool>();
  } else if constexpr (NamedEnum<T> || std::is_same_v<T, ByteSize> || std::is_same_v<T, Cadence> ||
                       std::is_same_v<T, std::string>) {
    // A size or a step count may be a number: read as its text, with the same limits.
    bool number = false;
    if constexpr (std::is_same_v<T, ByteSize> || std::is_same_v<T, Cadence>) number = j.is_number_unsigned();
    if (!number && !j.is_string()) return wrong("a string");
    if (auto why = field_from_text(v, number ? j.dump() : j.get<std::string>()))
      problems.add(path, ": " + *why);
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    if (!j.is_array()) return wrong("an array of integers");
    std::vector<int64_t> out;
    for (const auto& x : j) {
      if (!x.is_number_integer()) return wrong("an array of integers");
      out.push_back(x.get<int64_t>());
    }
    v = std::move(out);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!j.is_number()) return wrong("a number");
    const double x = j.get<double>();
    // Up to half a step past the largest T rounds to it: the largest float is
    // written 3.4028235e+38, a little more than itself, and must read back.
    constexpr double largest = std::numeric_limits<T>::max();
    const double below = std::nextafter(std::numeric_limits<T>::max(), T{0});
    const double rounds_down = largest + (largest - below) / 2;  // inf for double
    if (std::isfinite(x) && std::fabs(x) >= rounds_down)
      return problems.add(path, "is out of range (got " + j.dump() + ")");
    v = std::fabs(x) <= largest ? static_cast<T>(x) : static_cast<T>(x < 0 ? -largest : largest);
  } else {
    // Integers: through their text, so that negatives, fractions and overflow are refused alike.
    if (!j.is_number_integer()) return wrong("an integer");
    if (auto why = field_from_text(v, j.dump())) problems.add(path, ": " + *why);
  }
}

template <class Options>
void read_fields(const json& j, Options& o, const std::string& prefix, const std::vector<std::string>& extra,
                 Problems& problems, bool report_unknown = true) {
  std::vector<std::string_view> known;
  Options::fields(o, [&](const char* name, auto& value, const char*, const Range&) {
    known.push_back(name);
    if (auto it = j.find(name); it != j.end()) read_value(*it, value, prefix + name, problems);
  });
  if (!report_unknown) return;
  for (const auto& [key, value] : j.items()) {
    if (key == "name" || std::find(extra.begin(), extra.end(), key) != extra.end()) continue;
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::vector<std::string_view> all = known;
    for (const auto& e : extra) all.push_back(e);
    const auto near = closest_name(key, all);
    problems.add(prefix + key, std::string("is not a field of ") + prefix.substr(0, prefix.size() - 1) +
                                   (near ? " (did you mean " + *near + "?)" : ""));
  }
}

template <class Registry>
void read_choice(const json& j, typename Registry::Choice& choice, const std::string& section, const char* what,
                 const std::vector<std::string>& extra, Problems& problems) {
  if (!j.is_object()) return problems.add(section, "expected an object with \"name\", got " + j.dump());
  if (auto it = j.find("name"); it != j.end()) {
    if (!it->is_string()) return problems.add(section + ".name", "expected a string, got " + it->dump());
    const std::string name = it->get<std::string>();
    if (name != Registry::name_of(choice)) {
      auto made = Registry::make(name);
      if (!made) return problems.add(section + ".name", ": " + Registry::unknown(what, name));
      choice = *made;
    }
  }
  std::visit([&](auto& o) { read_fields(j, o, section + ".", extra, problems); }, choice);
}

// Plans, reports and checkpoints written before run.placement said "pin":
// true (the r-th core) is compact, false is none. The one place it is read.
json with_pin_as_placement(const json& run, Problems& problems) {
  const auto pin = run.find("pin");
  if (pin == run.end()) return run;
  json out = run;
  out.erase("pin");
  if (run.contains("placement"))
    problems.add("run.pin", "is the older name of run.placement: give one of them");
  else if (!pin->is_boolean())
    problems.add("run.pin", ": expected true or false, got " + pin->dump());
  else
    out["placement"] = pin->get<bool>() ? "compact" : "none";
  return out;
}

}  // namespace

json plan_to_json(const RunPlan& plan) {
  json data = choice_json(plan.data);
  write_fields(plan.data_controls, data);
  json run;
  write_fields(plan.run, run);
  return {{"model", choice_json(plan.model)},       {"data", data},
          {"optimizer", choice_json(plan.optimizer)}, {"strategy", choice_json(plan.strategy)},
          {"codec", choice_json(plan.codec)},         {"pull", choice_json(plan.pull)},
          {"run", run}};
}

RunPlan plan_from_json(const json& j, RunPlan plan, const std::string& where, Problems& problems) {
  Problems found;
  if (!j.is_object()) {
    problems.add(where, "a plan is a JSON object, got " + std::string(j.type_name()));
    return plan;
  }
  std::vector<std::string> data_extra;
  DataControls::fields(plan.data_controls, [&](const char* name, auto&, const char*, const Range&) { data_extra.push_back(name); });
  for (const auto& [key, value] : j.items()) {
    if (key == "model") read_choice<ModelRegistry>(value, plan.model, "model", "model", {}, found);
    else if (key == "data") {
      read_choice<DataRegistry>(value, plan.data, "data", "data set", data_extra, found);
      if (value.is_object()) read_fields(value, plan.data_controls, "data.", {}, found, /*report_unknown=*/false);
    } else if (key == "optimizer") read_choice<OptimizerRegistry>(value, plan.optimizer, "optimizer", "optimizer", {}, found);
    else if (key == "strategy") read_choice<StrategyRegistry>(value, plan.strategy, "strategy", "strategy", {}, found);
    else if (key == "codec") read_choice<CodecRegistry>(value, plan.codec, "codec", "codec", {}, found);
    else if (key == "pull") read_choice<PullCodecRegistry>(value, plan.pull, "pull", "pull codec", {}, found);
    else if (key == "run") {
      if (!value.is_object()) found.add("run", "expected an object, got " + value.dump());
      else read_fields(with_pin_as_placement(value, found), plan.run, "run.", {}, found);
    } else {
      static constexpr std::array<std::string_view, 7> sections = {"model",  "data", "optimizer", "strategy",
                                                                   "codec", "pull", "run"};
      const auto near = closest_name(key, sections);
      found.add(key, std::string("is not a section of a plan") + (near ? " (did you mean " + *near + "?)" : ""));
    }
  }
  for (const auto& p : found.list()) problems.add(where.empty() ? p.field : where + ": " + p.field, p.message);
  return plan;
}

RunPlan read_plan_file(const std::string& path) {
  const std::string text = read_input_file(path, size_t{64} << 20, "a plan file", "plan file " + path);
  json j;
  try {
    j = json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {  // a syntax error, or a number no double holds (1e999)
    throw Error("plan file " + path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  // A run report holds its plan under "plan".
  if (j.is_object() && j.contains("schema_version") && j.contains("plan")) j = j["plan"];
  Problems problems;
  RunPlan plan = plan_from_json(j, RunPlan{}, "", problems);
  if (!problems.empty()) throw Error("plan file " + path + ": " + problems.joined());
  return plan;
}

}  // namespace ptrain
