// Fuzz target: plan files (src/plan/plan_json), read as `ptrain train
// --config FILE` reads them: read_plan_file (JSON with // and /* */
// comments, or a run report's "plan"), then check_plan and what a run derives
// from the plan. A refused file is a ptrain::Error of one line; a plan that
// passes check_plan writes back to JSON that reads as the same plan (a report
// embeds its plan so that it can be replayed).
#include <sstream>

#include "fuzz_support.hpp"
#include "plan/plan_json.hpp"

namespace ptrain::fuzz {
namespace {

template <class Registry, class Choice>
std::vector<Choice> every_kind() {
  std::vector<Choice> kinds;
  for (std::string_view name : Registry::names()) kinds.push_back(*Registry::make(name));
  return kinds;
}

void write_plan(const std::string& dir, const std::string& name, const RunPlan& plan) {
  require(check_plan(plan).empty(), "seed plan " + name + " does not pass check_plan");
  write_seed(dir, name, as_input(plan_to_json(plan).dump(2)));
}

// Every name a plan may hold (sections, kinds, fields, the values of named
// choices) and JSON's harder words: escapes in strings, numbers at and past
// the limits of their types, comments.
std::vector<std::string> plan_words() {
  std::vector<std::string> words = {"model", "data", "optimizer", "strategy", "codec", "run", "name", "plan"};
  const auto add_fields = [&](const auto& options) {
    std::decay_t<decltype(options)>::fields(
        options, [&](const char* name, const auto& value, const char*, const Range&) {
          words.push_back(name);
          using T = std::decay_t<decltype(value)>;
          if constexpr (NamedEnum<T>)
            for (std::string_view text : EnumText<T>::names) words.emplace_back(text);
        });
  };
  const auto add_kinds = [&](const auto& kinds) {
    for (const auto& kind : kinds) {
      std::visit([&](const auto& o) { words.emplace_back(std::decay_t<decltype(o)>::name); }, kind);
      std::visit(add_fields, kind);
    }
  };
  add_kinds(every_kind<StrategyRegistry, StrategyChoice>());
  add_kinds(every_kind<CodecRegistry, CodecChoice>());
  add_kinds(every_kind<OptimizerRegistry, OptimizerChoice>());
  add_kinds(every_kind<ModelRegistry, ModelChoice>());
  add_kinds(every_kind<DataRegistry, DataChoice>());
  add_fields(DataControls{});
  add_fields(RunControls{});
  std::istringstream json_words(
      R"(\n \u0000 \" \ud800 \t // /* */ null true false [] {} 1e999 -1e999 1e-999 -0 0.5 -1 1.5 4294967296
         2147483648 18446744073709551615 18446744073709551616 9223372036854775808 -9223372036854775809 KiB MiB
         GiB s drop: inf nan schema_version)");
  for (std::string word; json_words >> word;) words.push_back(word);
  return words;
}

// Plans as plan_to_json writes them: every strategy, codec, optimizer, model
// and data set with its defaults; a run report that embeds a plan; a plan
// file with comments.
void write_seeds(const std::string& dir) {
  const RunPlan defaults;
  write_plan(dir, "defaults", defaults);
  for (const auto& strategy : every_kind<StrategyRegistry, StrategyChoice>()) {
    RunPlan plan;
    plan.strategy = strategy;
    write_plan(dir, "strategy-" + std::string(StrategyRegistry::name_of(strategy)), plan);
  }
  for (const auto& codec : every_kind<CodecRegistry, CodecChoice>()) {
    RunPlan plan;
    plan.codec = codec;
    if (takes_momentum(codec)) plan.optimizer = MomentumOptions{};
    write_plan(dir, "codec-" + std::string(CodecRegistry::name_of(codec)), plan);
  }
  for (const auto& optimizer : every_kind<OptimizerRegistry, OptimizerChoice>()) {
    RunPlan plan;
    plan.optimizer = optimizer;
    write_plan(dir, "optimizer-" + std::string(OptimizerRegistry::name_of(optimizer)), plan);
  }
  for (const auto& model : every_kind<ModelRegistry, ModelChoice>()) {
    RunPlan plan;
    plan.model = model;
    write_plan(dir, "model-" + std::string(ModelRegistry::name_of(model)), plan);
  }
  for (const auto& data : every_kind<DataRegistry, DataChoice>()) {
    RunPlan plan;
    plan.data = data;
    write_plan(dir, "data-" + std::string(DataRegistry::name_of(data)), plan);
  }
  RunPlan checkpointed;
  checkpointed.run.checkpoint_dir = "ckpt";
  checkpointed.run.checkpoint_every = Cadence{0, 30};
  checkpointed.run.straggler_rank = 1;
  checkpointed.run.straggler_factor = 2.5;
  checkpointed.run.workers = 4;
  write_plan(dir, "run-controls", checkpointed);
  const nlohmann::json report = {
      {"schema_version", 1}, {"command", "train"}, {"plan", plan_to_json(defaults)}};
  write_seed(dir, "report", as_input(report.dump(2)));
  write_dictionary(dir, plan_words());
  write_seed(
      dir, "comments",
      as_input(
          "// a plan file\n{\n  \"strategy\": {\"name\": \"ssp\", /* bounded */ \"staleness\": 3},\n"
          "  \"codec\": {\"name\": \"topk\", \"ratio\": 0.05},\n  \"run\": {\"workers\": 4, \"batch\": 64, "
          "\"checkpoint_every\": \"30s\"}\n}\n"));
}

}  // namespace
}  // namespace ptrain::fuzz

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  ptrain::fuzz::write_seeds_if_asked(argc, argv, ptrain::fuzz::write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptrain;
  using namespace ptrain::fuzz;
  static MemoryFile file("plan");
  const std::string& path = file.hold({data, size});
  RunPlan plan;
  if (!accepted([&] { plan = read_plan_file(path); }, "plan file " + path)) return 0;
  if (!accepted([&] { check_plan(plan).throw_if_any(); })) return 0;
  // What a run takes from a checked plan.
  accepted([&] {
    effective_optimizer_and_codec(plan);
    strategy_factory_of(plan.strategy);
    shared_memory_config(plan.strategy);
    servers_of(plan.strategy);
  });
  // Written as a report embeds it, read back as a replay reads it.
  const nlohmann::json written = plan_to_json(plan);
  Problems problems;
  const RunPlan replayed = plan_from_json(nlohmann::json::parse(written.dump()), RunPlan{}, "", problems);
  require(problems.empty(),
          "a checked plan does not read back from its JSON: " + problems.joined() + " in " + written.dump());
  require(plan_to_json(replayed) == written, "a checked plan reads back as another plan: " + written.dump() +
                                                 " became " + plan_to_json(replayed).dump());
  return 0;
}
