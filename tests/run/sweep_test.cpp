// run_sweep with a stand-in runner (no training): rows appended in grid order,
// resuming (a torn last line dropped, the runs present skipped, to the same
// bytes as a sweep never stopped), a CSV of another grid or plan refused, a
// damaged line named, crashed and diverged runs counted per cell.
#include "run/sweep.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

namespace fs = std::filesystem;

std::string text_of(const std::string& path) {
  const auto bytes = read_regular_file(path, "read");
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// hogwild at threads {1, 2} x lr {0.05, 0.1}, batch 16, two repetitions each.
std::vector<SweepRun> grid(int epochs = 1) {
  std::vector<SweepRun> runs;
  for (int threads : {1, 2})
    for (float lr : {0.05f, 0.1f})
      for (int rep = 0; rep < 2; ++rep) {
        RunPlan plan;
        plan.strategy = HogwildOptions{};
        plan.run.workers = threads;
        plan.run.batch = 16;
        plan.run.epochs = epochs;
        plan.run.seed = 7 + static_cast<uint64_t>(rep);
        std::visit([&](auto& o) { o.lr = lr; }, plan.optimizer);
        SweepRun run;
        run.cell = SweepCell{"hogwild", threads, 16, lr};
        run.repetition = rep;
        run.plan = plan;
        runs.push_back(std::move(run));
      }
  return runs;
}

// A deterministic stand-in for training: lr 0.1 at 2 threads diverges, the
// others reach the target in a time that depends on the plan.
struct FakeRunner {
  std::vector<uint64_t> seeds_run;
  RunResult operator()(const RunPlan& plan, const RunCallbacks& callbacks) {
    seeds_run.push_back(plan.run.seed * 100 + static_cast<uint64_t>(plan.run.workers));
    if (callbacks.on_start) callbacks.on_start(RunStart{});
    const float lr = std::visit([](const auto& o) { return o.lr; }, plan.optimizer);
    RunResult r;
    AsyncSgdResult s;
    s.diverged = lr > 0.09f && plan.run.workers == 2;
    s.stopped_by = s.diverged ? "diverged" : "target";
    if (!s.diverged) s.seconds_to_target = 0.5 * plan.run.workers + lr + static_cast<double>(plan.run.seed) / 100;
    s.final_loss = s.diverged ? 1e9 : 0.4;
    s.totals.applied = 100;
    s.gradients = 100;
    s.staleness.bins = {60, 40};
    s.train_seconds = 1;
    r.final_params = {lr, static_cast<float>(plan.run.seed)};
    r.shared_memory = s;
    return r;
  }
};

SweepRunner runner_of(FakeRunner& fake) {
  return [&](const RunPlan& p, const RunCallbacks& c) { return fake(p, c); };
}

TEST(Sweep, AppendsOneRowPerRunInGridOrderAndResumesNothingWhenComplete) {
  test::ScratchDir dir;
  const std::string path = dir.file("s.csv");
  FakeRunner fake;
  const auto runs = grid();
  const SweepResult first = run_sweep(runs, path, "--csv s.csv", {}, runner_of(fake));
  EXPECT_EQ(first.resumed, 0u);
  EXPECT_EQ(fake.seeds_run.size(), 8u);
  const auto lines = lines_of(text_of(path));
  ASSERT_EQ(lines.size(), 9u);
  EXPECT_EQ(lines[0] + "\n", kSweepCsvHeader);
  EXPECT_EQ(lines[1].rfind("hogwild,1,16,0.05,0,7,target,1,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[8].rfind("hogwild,2,16,0.1,1,8,diverged,0,,", 0), 0u) << lines[8];
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);  // nothing else made

  std::vector<std::string> notes;
  SweepCallbacks callbacks;
  callbacks.on_note = [&](const std::string& n) { notes.push_back(n); };
  const SweepResult again = run_sweep(runs, path, "--csv s.csv", callbacks, runner_of(fake));
  EXPECT_EQ(fake.seeds_run.size(), 8u);  // nothing run again
  EXPECT_EQ(again.resumed, 8u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "--csv s.csv: resuming: 8 of 8 runs are in it (2 diverged, 0 crashed); running the other 0");
  ASSERT_EQ(again.rows.size(), first.rows.size());
  for (size_t i = 0; i < again.rows.size(); ++i) EXPECT_EQ(again.rows[i].cell, first.rows[i].cell);
}

TEST(Sweep, AStoppedSweepResumesToTheBytesOfOneNeverStopped) {
  test::ScratchDir dir;
  FakeRunner whole_runner;
  run_sweep(grid(), dir.file("whole.csv"), "w", {}, runner_of(whole_runner));
  const std::string whole = text_of(dir.file("whole.csv"));
  const auto lines = lines_of(whole);
  // Stopped during the fourth run's row: three whole rows and part of the fourth.
  std::string cut = kSweepCsvHeader;
  for (size_t i = 1; i <= 3; ++i) cut += lines[i] + "\n";
  cut += lines[4].substr(0, 20);
  write_text(dir.file("cut.csv"), cut);
  std::vector<std::string> notes;
  FakeRunner resumed_runner;
  SweepCallbacks callbacks;
  callbacks.on_note = [&](const std::string& n) { notes.push_back(n); };
  const SweepResult r = run_sweep(grid(), dir.file("cut.csv"), "--csv cut.csv", callbacks, runner_of(resumed_runner));
  EXPECT_EQ(text_of(dir.file("cut.csv")), whole);
  EXPECT_EQ(r.resumed, 3u);
  EXPECT_EQ(resumed_runner.seeds_run.size(), 5u);  // the torn run and the four after it
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0],
            "--csv cut.csv: dropped a torn last line (a row cut short when the sweep was stopped); that run runs "
            "again");
  EXPECT_EQ(notes[1], "--csv cut.csv: resuming: 3 of 8 runs are in it (0 diverged, 0 crashed); running the other 5");
}

TEST(Sweep, ACsvOfAnotherSweepOrADamagedOneIsRefusedUntouched) {
  test::ScratchDir dir;
  FakeRunner fake;
  run_sweep(grid(), dir.file("s.csv"), "s", {}, runner_of(fake));
  const std::string written = text_of(dir.file("s.csv"));
  const auto lines = lines_of(written);
  auto expect_refused = [&](const std::string& text, const std::vector<SweepRun>& runs, const std::string& message) {
    write_text(dir.file("x.csv"), text);
    FakeRunner never;
    EXPECT_EQ(test::error_message([&] { run_sweep(runs, dir.file("x.csv"), "--csv x.csv", {}, runner_of(never)); }),
              message);
    EXPECT_TRUE(never.seeds_run.empty());
    EXPECT_EQ(text_of(dir.file("x.csv")), text);
  };
  // Another grid: the sweep has only lr 0.05 and 0.1 at one thread.
  auto smaller = grid();
  smaller.resize(4);
  expect_refused(written, smaller,
                 "--csv x.csv: line 6: hogwild, 2 thread(s), batch 16, lr 0.05, repetition 0 is not a run of this "
                 "sweep's grid (a CSV of another sweep: name another file, or give the sweep the grid it was "
                 "written with)");
  // The same grid, another plan (two epochs).
  expect_refused(written, grid(2),
                 "--csv x.csv: line 2: hogwild, 1 thread(s), batch 16, lr 0.05, repetition 0 ran with another plan "
                 "than this sweep's (another seed, model, data, epochs, target or strategy option): name another "
                 "file, or give the sweep the options it was written with");
  // A damaged line that is whole (it ends with its newline), and one with a word for a number.
  expect_refused(kSweepCsvHeader + lines[1] + "\nhogwild,1,16\n", grid(),
                 "--csv x.csv: line 3 is damaged: 3 fields, a sweep row has 31");
  std::string word = lines[1];
  word.replace(word.find(",16,"), 4, ",sixteen,");
  expect_refused(kSweepCsvHeader + word + "\n", grid(),
                 "--csv x.csv: line 2 is damaged: column 3 is 'sixteen', not a number");
  expect_refused(kSweepCsvHeader + lines[1] + "\n" + lines[1] + "\n", grid(),
                 "--csv x.csv: line 3: hogwild, 1 thread(s), batch 16, lr 0.05, repetition 0 is there twice (line 2 "
                 "too)");
  const std::string refused_header =
      "--csv x.csv: its first line is not the header of this version's sweep CSV (another file, or one written by "
      "an older ptrain); name another file";
  expect_refused("strategy,threads,batch,lr\nhogwild,1,16,0.05\n", grid(), refused_header);
  expect_refused("", grid(), refused_header);
}

TEST(Sweep, CrashedAndDivergedRunsAreCountedPerCellAndTheSweepGoesOn) {
  test::ScratchDir dir;
  FakeRunner fake;
  int calls = 0;
  // The second repetition of (1 thread, lr 0.1) throws during training.
  const SweepRunner runner = [&](const RunPlan& plan, const RunCallbacks& callbacks) {
    ++calls;
    const float lr = std::visit([](const auto& o) { return o.lr; }, plan.optimizer);
    if (plan.run.workers == 1 && lr > 0.09f && plan.run.seed == 8) {
      callbacks.on_start(RunStart{});
      throw Error("shared-memory thread 0 failed: out of \"memory\",\nreally");
    }
    return fake(plan, callbacks);
  };
  const SweepResult r = run_sweep(grid(), dir.file("s.csv"), "s", {}, runner);
  EXPECT_EQ(calls, 8);
  const auto lines = lines_of(text_of(dir.file("s.csv")));
  ASSERT_EQ(lines.size(), 9u);  // one line per run, the crash's error too
  EXPECT_EQ(lines[4], "hogwild,1,16,0.1,1,8,crashed,0,,,,0,1,,,,,,,,,,,,,,,," + plan_fingerprint(grid()[3].plan) +
                          ",\"shared-memory thread 0 failed: out of \"\"memory\"\", really\",");
  EXPECT_EQ(r.rows[3].error, "shared-memory thread 0 failed: out of \"memory\", really");
  const auto cells = summarize_sweep(r.rows);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[1].cell, (SweepCell{"hogwild", 1, 16, 0.1f}));
  EXPECT_EQ(cells[1].runs, 2u);
  EXPECT_EQ(cells[1].crashed, 1u);
  EXPECT_EQ(cells[1].reached_target, 1u);
  EXPECT_FALSE(std::isfinite(cells[1].median_seconds_to_target));  // one of two missed it
  EXPECT_EQ(cells[3].diverged, 2u);
  EXPECT_EQ(sweep_summary_csv(cells),
            "strategy,threads,batch,lr,runs,reached_target,diverged,crashed,median_seconds_to_target\n"
            "hogwild,1,16,0.05,2,2,0,0,0.6250\n"
            "hogwild,1,16,0.1,2,1,0,1,\n"
            "hogwild,2,16,0.05,2,2,0,0,1.1250\n"
            "hogwild,2,16,0.1,2,0,2,0,\n");
  // Read back, the crash is the same row.
  FakeRunner never;
  const SweepResult again = run_sweep(grid(), dir.file("s.csv"), "s", {}, runner_of(never));
  EXPECT_TRUE(again.rows[3].crashed);
  EXPECT_EQ(again.rows[3].error, r.rows[3].error);
}

TEST(Sweep, AnErrorBeforeTrainingEndsTheSweepKeepingTheRowsBeforeIt) {
  test::ScratchDir dir;
  FakeRunner fake;
  size_t calls = 0;
  const SweepRunner failing = [&](const RunPlan& plan, const RunCallbacks& callbacks) {
    if (++calls == 3) throw Error("data.dir: /gone: no such directory");
    return fake(plan, callbacks);
  };
  EXPECT_EQ(test::error_message([&] { run_sweep(grid(), dir.file("s.csv"), "s", {}, failing); }),
            "sweep: hogwild, 1 thread(s), batch 16, lr 0.1, repetition 0: data.dir: /gone: no such directory");
  EXPECT_EQ(lines_of(text_of(dir.file("s.csv"))).size(), 3u);
  const SweepResult resumed = run_sweep(grid(), dir.file("s.csv"), "s", {}, runner_of(fake));
  EXPECT_EQ(resumed.resumed, 2u);
  EXPECT_EQ(lines_of(text_of(dir.file("s.csv"))).size(), 9u);
}

// Refused before its first row (the data, the model): a sweep leaves no CSV
// of its own behind, and one it was resuming stays as it was.
TEST(Sweep, AnErrorBeforeTheFirstRowLeavesNoFile) {
  test::ScratchDir dir;
  FakeRunner fake;
  const SweepRunner refusing = [&](const RunPlan&, const RunCallbacks&) -> RunResult {
    throw Error("data.dir: /gone: no such directory");
  };
  EXPECT_NE(test::error_message([&] { run_sweep(grid(), dir.file("s.csv"), "s", {}, refusing); }), "");
  EXPECT_FALSE(std::filesystem::exists(dir.file("s.csv")));
  size_t calls = 0;
  const SweepRunner once = [&](const RunPlan& plan, const RunCallbacks& callbacks) {
    if (++calls == 2) throw Error("data.dir: /gone: no such directory");
    return fake(plan, callbacks);
  };
  EXPECT_NE(test::error_message([&] { run_sweep(grid(), dir.file("s.csv"), "s", {}, once); }), "");
  const std::string kept = text_of(dir.file("s.csv"));
  EXPECT_EQ(lines_of(kept).size(), 2u);  // the header and the one row
  EXPECT_NE(test::error_message([&] { run_sweep(grid(), dir.file("s.csv"), "s", {}, refusing); }), "");
  EXPECT_EQ(text_of(dir.file("s.csv")), kept);
}

}  // namespace
}  // namespace ptrain
