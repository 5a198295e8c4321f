// `ptrain shm` and `ptrain sweep` as a user meets them: errors, a real run on
// Fashion-MNIST with its report, a diverged run, and a small sweep's CSV.
#include <algorithm>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_ptrain.hpp"

namespace ptrain {
namespace {

using test::lines;
using test::Outcome;
using test::run_ptrain;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t fields(const std::string& csv_line) { return 1 + static_cast<size_t>(std::count(csv_line.begin(), csv_line.end(), ',')); }

TEST(PtrainShmCli, ImpossibleOptionsAreOneLineErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"shm --strategy hogwlid", "--strategy: unknown strategy 'hogwlid' (did you mean hogwild?"},
      {"shm --strategy seq --threads 2", "--workers must be 1: seq runs one thread (got 2)"},
      {"shm --strategy hybrid", "--strategy hybrid: ptrain shm runs the shared-memory strategies"},
      {"shm --threads -3", "--workers must be >= 0 (got -3)"},
      {"shm --lr 0", "--lr must be > 0"},
      {"shm --batch 0", "--batch must be at least 1"},
      {"shm --epochs 0", "--epochs must be > 0"},
      {"shm --strategy mutex --persistence 2", "--persistence: strategy mutex has no such option"},
      {"shm --persistence -5", "--persistence must be >= -1 (got -5)"},
      {"shm --backoff random", "--backoff: expected one of none, exp, exp-jitter, got 'random'"},
      {"shm --backoff exp --backoff-min 10 --backoff-max 1", "--backoff-max must be at least backoff_min"},
      {"shm --target-loss -1", "--target-loss must be >= 0"},
      {"shm --compress dgc", "exchanges no gradients to compress"},
      {"shm --straggler 1:4", "--straggler"},
      {"shm --model resnet", "--model: unknown model 'resnet'"},
      {"shm --hidden 12,x", "--hidden: expected positive integers"},
      {"shm --data /no/such/dir", "/no/such/dir"},
      {"shm --report /no/such/dir/r.json", "--report /no/such/dir/r.json"},
      {"sweep --csv /no/such/dir/s.csv", "--csv /no/such/dir/s.csv"},
      {"sweep", "--csv is required"},
      {"sweep --csv s.csv --strategies seq,gossip", "unknown strategy 'gossip'"},
      {"sweep --csv s.csv --strategies hybrid", "hybrid is not a shared-memory strategy"},
      {"sweep --csv s.csv --threads 2,0", "--threads must be at least 1 (got 0)"},
      {"sweep --csv s.csv --lr 0.1,-1", "--lr must be > 0"},
      {"sweep --csv s.csv --repetitions 0", "--repetitions must be at least 1"},
  };
  test::expect_one_line_errors(cases);
}

TEST(PtrainShmCli, LeashedRunReachesTheTargetAndReports) {
  test::ScratchDir dir;
  const Outcome o = run_ptrain(
      "shm --strategy leashed --threads 2 --batch 16 --lr 0.05 --train-samples 3000 --loss-sample 1000 "
      "--epochs 4 --target-loss 0.8 --check-every 40 --report " + dir.file("r.json"));
  ASSERT_EQ(o.exit_code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("stopped by   target"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("failed per update"), std::string::npos) << o.out;
  // The one report schema of every training command, with the shared-memory section.
  const auto report = read_json(dir.file("r.json"));
  EXPECT_EQ(report["schema_version"], 1);
  EXPECT_EQ(report["plan"]["strategy"]["name"], "leashed");
  EXPECT_EQ(report["plan"]["strategy"]["loss_sample"], 1000);
  EXPECT_EQ(report["plan"]["run"]["workers"], 2);
  EXPECT_EQ(report["run"]["parameters"], 784 * 128 + 128 + 2 * (128 * 128 + 128) + 128 * 10 + 10);
  const auto& s = report["shared_memory"];
  EXPECT_EQ(s["stopped_by"], "target");
  EXPECT_LE(s["final_train_loss"].get<double>(), 0.8);
  EXPECT_GT(s["seconds_to_target"].get<double>(), 0);
  uint64_t histogram_total = 0;
  for (const auto& c : s["staleness_histogram"]) histogram_total += c.get<uint64_t>();
  EXPECT_EQ(histogram_total, s["updates"].get<uint64_t>());
  const auto& curve = report["loss_curve"];
  ASSERT_GE(curve.size(), 2u);
  EXPECT_EQ(curve[0]["step"], 0);
  EXPECT_GT(curve[0]["loss"].get<double>(), 2.0);  // the untrained model
  ASSERT_GE(report["epochs"].size(), 1u);  // the test set where the run stopped
  EXPECT_GT(report["epochs"].back()["test_accuracy"].get<double>(), 0.6);
}

TEST(PtrainShmCli, ADivergedRunStopsCleanlyAndSaysSo) {
  test::ScratchDir dir;
  const Outcome o = run_ptrain(
      "shm --strategy hogwild --threads 2 --lr 500 --train-samples 2000 --epochs 2 --diverge-above 20 "
      "--report " + dir.file("r.json"));
  EXPECT_EQ(o.exit_code, 3) << o.err << o.out;
  EXPECT_NE(o.out.find("stopped by   diverged"), std::string::npos) << o.out;
  EXPECT_TRUE(o.err.starts_with("ptrain: error: training diverged: thread ")) << o.err;  // one line
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  const auto report = read_json(dir.file("r.json"));
  EXPECT_TRUE(report["shared_memory"]["diverged"].get<bool>());
  EXPECT_EQ(report["outcome"]["status"], "diverged");
}

TEST(PtrainShmCli, SweepWritesOneRowPerRun) {
  test::ScratchDir dir;
  const Outcome o = run_ptrain(
      "sweep --strategies seq,hogwild,leashed --threads 1,2 --batch 16 --lr 0.05,0.1 --repetitions 2 "
      "--train-samples 1000 --loss-sample 500 --epochs 1 --target-loss 1.2 --model softmax --csv " + dir.file("s.csv"));
  ASSERT_EQ(o.exit_code, 0) << o.err << o.out;
  const auto rows = read_lines(dir.file("s.csv"));
  // seq once per lr (1 thread); hogwild and leashed at 1 and 2 threads; 2 repetitions each.
  ASSERT_EQ(rows.size(), 1u + (2 + 2 * 2 * 2) * 2);
  const size_t columns = fields(rows[0]);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(fields(rows[i]), columns) << rows[i];
  EXPECT_EQ(rows[1].rfind("seq,1,16,0.05,0,", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind("seq,1,16,0.05,1,", 0), 0u) << rows[2];  // the next repetition, seed + 1
  EXPECT_NE(o.out.find("best batch and step size"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("leashed  2 thread(s): batch 16"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace ptrain
