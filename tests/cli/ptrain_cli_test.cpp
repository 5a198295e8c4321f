// The ptrain executable as a user meets it: errors, help and a small real run.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "core/run_failure.hpp"
#include "model/device_support.hpp"
#include "run_ptrain.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::lines;
using test::Outcome;
using test::run_ptrain;
using test::run_ptrain_with_env;

struct BadOption {
  std::string args;
  std::string expected;  // a part of the one-line message
};

TEST(PtrainCli, ImpossibleOptionsAreOneLineErrors) {
  test::ScratchDir empty;
  const std::vector<BadOption> cases = {
      {"--lr 0", "--lr must be > 0 (got 0)"},
      {"--lr -0.5", "--lr must be > 0"},
      {"--workers -1", "--workers must be >= 0 (got -1)"},
      {"--workers many", "--workers: expected an integer, got 'many'"},
      {"--epochs -1", "--epochs must be in (0, 1e+06] (got -1)"},
      {"--batch -1", "--batch: must not be negative, got '-1'"},
      {"--model resnet9000", "--model: unknown model 'resnet9000'"},
      {"--strategy gossip", "--strategy: unknown strategy 'gossip'"},
      {"--strategy hybird", "did you mean hybrid?"},
      {"--optimizer rmsprop", "--optimizer: unknown optimizer 'rmsprop'"},
      {"--allreduce gossip", "--allreduce: expected one of native, ring, hd, tree, hierarchical, got 'gossip'"},
      {"--bucket-size 0", "--bucket-size must be > 0 (got 0B)"},
      {"--bucket-size -1", "--bucket-size: expected a size such as 25MiB"},
      {"--bucket-size 12XB", "got '12XB'"},
      {"--compress zip", "--compress: unknown codec 'zip'"},
      {"--compress dgc --dgc-density 0", "--dgc-density must be in (0, 1] (got 0)"},
      {"--compress topk --topk-ratio 1.5", "--topk-ratio must be in (0, 1] (got 1.5)"},
      {"--compress int8 --int8-rounding up", "--int8-rounding: expected one of nearest, stochastic, got 'up'"},
      {"--compress fp16 --strategy sequential", "--compress: the sequential strategy exchanges no gradients"},
      {"--compress dgc --dgc-momentum-correction on", "--dgc-momentum-correction on needs the momentum optimizer"},
      {"--dgc-density 0.01", "--dgc-density: compress none has no such option (it is for compress dgc)"},
      {"--strategy ps-backup --workers 4 --backup 4", "--backup must be below the 4 workers"},
      {"--strategy ps-sync --servers 0", "--servers must be at least 1 (got 0)"},
      {"--strategy async --stale-policy drop:x", "--stale-policy expected none, drop:T"},
      {"--strategy ps-sync --stale-policy scale", "--stale-policy: strategy ps-sync has no such option (it is for strategy ssp, async)"},
      {"--strategy ssp --async-lr-divide", "--async-lr-divide: strategy ssp has no such option"},
      {"--pull fp16", "--pull: the hybrid strategy pulls no parameters from servers (got pull fp16"},
      {"--strategy ps-sync --pull zip", "--pull: unknown pull codec 'zip'"},
      {"--strategy async --pull topk --pull-topk-ratio 0", "--pull-topk-ratio must be in (0, 1] (got 0)"},
      {"--strategy ssp --pull-topk-refresh 5", "--pull-topk-refresh: pull none has no such option (it is for pull topk)"},
      {"--strategy ps-sync --pull int8 --pull-int8-chunk 0", "--pull-int8-chunk must be at least 1 (got 0)"},
      {"--strategy hybrid --time-limit 5", "--time-limit applies to the strategies that stop on time"},
      {"--momentum 0.5", "--momentum: optimizer adam has no such option (it is for optimizer momentum, nesterov)"},
      {"--optimizer sgd --beta1 0.5", "--beta1: optimizer sgd has no such option"},
      {"--workers 4 --straggler 9:2", "--straggler is no worker among 4 workers (got 9)"},
      {"--straggler 1:0.5", "--straggler '1:0.5': expected RANK:FACTOR with FACTOR >= 1"},
      {"--straggler fast", "--straggler 'fast'"},
      {"--hidden 128,,64", "--hidden: expected positive integers separated by commas, got '128,,64'"},
      {"--momentum 1.5 --optimizer momentum", "--momentum must be in [0, 1) (got 1.5)"},
      {"--weight-decay -1", "--weight-decay must be >= 0 (got -1)"},
      {"--comm-timeout inf", "--comm-timeout must be in [0.001, 1e+06] (got inf)"},
      {"--comm-timeout 1e300", "--comm-timeout must be in [0.001, 1e+06] (got 1e+300)"},
      {"--epochs 1e300", "--epochs must be in (0, 1e+06] (got 1e+300)"},
      {"--data " + empty.path().string(), "missing train-images-idx3-ubyte"},
      {"--data /no/such/dir", "/no/such/dir"},
      {"--report /no/such/dir/r.json", "--report /no/such/dir/r.json"},
      {"--config /no/such/plan.json", "/no/such/plan.json: no such file"},
      {"--workers 4 --train-samples 100 --batch 26", "larger than each worker's shard of 25"},
      {"--no-such-flag", "--no-such-flag"},
      {"--worker 2", "did you mean --workers?"},
      {"--device tpu", "--device: expected cpu, cuda or cuda:N, got 'tpu'"},
      {"--device cuda:", "--device: expected cpu, cuda or cuda:N, got 'cuda:'"},
      {"--strategy hogwild --device cuda", "--device cuda: the hogwild strategy is a CPU algorithm"},
      {"--model softmax --device cuda:0", "--device cuda:0: model softmax is ptrain's own CPU code"},
      // Every problem at once, on one line.
      {"--lr 0 --epochs 0 --batch 0", "--lr must be > 0 (got 0); --batch must be at least 1 (got 0); --epochs must be in (0, 1e+06]"},
  };
  for (const auto& c : cases) {
    const Outcome o = run_ptrain("train " + c.args);
    EXPECT_NE(o.exit_code, 0) << c.args;
    EXPECT_EQ(lines(o.err), 1u) << c.args << ": " << o.err;
    EXPECT_NE(o.err.find("ptrain: error: "), std::string::npos) << c.args << ": " << o.err;
    EXPECT_NE(o.err.find(c.expected), std::string::npos) << c.args << ": " << o.err;
  }
}

// Found by tools/bad_inputs.sh (docs/bad_inputs.md): empty paths taken as
// "none" (no report, no model saved, silently), negative counts read as 2^64 - 1
// by CLI11 (simulate --workers -1 never ended), thread counts no process runs
// (bench allreduce --ranks 100000 aborted), and CSV files written through a
// symlink or replacing a device.
TEST(PtrainCli, EveryCommandRefusesEmptyPathsHugeCountsAndOutputsItMustNotWrite) {
  test::ScratchDir dir;
  test::write_bytes(dir.file("target"), {'k', 'e', 'e', 'p'});
  std::filesystem::create_symlink(dir.file("target"), dir.file("link.csv"));
  const std::string bench = "bench compress --sizes 4096 --iters 1 --warmup 0 ";
  test::expect_one_line_errors({
      {"train --report ''", "--report: an empty path"},
      {"train --save ''", "--save: an empty path"},
      {"train --data ''", "--data: an empty path"},
      {"train --config ''", "--config: an empty path"},
      {"train --checkpoint-dir ''", "--checkpoint-dir: an empty path"},
      {"eval --model ''", "--model: an empty path"},
      {"train --workers 100000", "--workers 100000: more threads than the 1024 one process runs"},
      {"shm --threads -1", "--threads: Value -1 not in range 1 to 1024"},
      {"simulate --workers -1", "--workers: Value -1 not in range 1 to 1048576"},
      {"simulate --workers 10000000000000", "--workers: Value 10000000000000 not in range"},
      {"simulate --batch -1", "--batch: Value -1 not in range"},
      {"simulate --latency 1e300", "--latency must be >= 0 and at most 1e6 s"},
      {"simulate --parameters 1e300", "--parameters must be > 0 and at most 1e+15"},
      {"simulate --calibrate " + dir.file("target") + " --calibrate-bandwidth nan",
       "--calibrate-bandwidth must be > 0 and at most 1e9 Gbit/s (got nan)"},
      {"sweep --threads -1 --csv " + dir.file("s.csv"), "--threads: Value -1 not in range 1 to 1024"},
      {"sweep --repetitions 2000000000 --csv " + dir.file("s.csv"), "--repetitions: Value 2000000000 not in range"},
      {"bench allreduce --ranks 100000", "--ranks 100000: more threads than the 1024 one process runs"},
      {"bench allreduce --ranks 2 --sizes 4KiB --algo pigeon", "--algo pigeon: unknown algorithm"},
      {"bench allreduce --ranks 2 --sizes 4KiB --iters 1 --csv " + dir.file("link.csv"),
       "--csv " + dir.file("link.csv") + ": is a symbolic link; not replaced"},
      {bench + "--csv " + dir.file("link.csv"), "--csv " + dir.file("link.csv") + ": is a symbolic link; not replaced"},
      {bench + "--csv /proc/c.csv", "--csv /proc/c.csv: cannot create a file in /proc"},
  });
  EXPECT_EQ(test::read_bytes(dir.file("target")), (std::vector<uint8_t>{'k', 'e', 'e', 'p'}));
  EXPECT_FALSE(std::filesystem::exists(dir.file("s.csv")));
}

TEST(PtrainCli, HelpListsEveryOptionWithItsDefault) {
  const Outcome o = run_ptrain("train --help");
  EXPECT_EQ(o.exit_code, 0);
  for (const char* option : {"--model", "--workers", "--strategy", "--optimizer", "--lr", "--momentum",
                             "--weight-decay", "--batch", "--epochs", "--seed", "--data", "--report", "--config",
                             "--compress", "--dgc-density", "--staleness", "--quiet"})
    EXPECT_NE(o.out.find(option), std::string::npos) << option;
  // Every registered kind is listed, and the switches that are on by default say so.
  for (const char* kind : {"hybrid", "sequential", "ps-sync", "ps-backup", "ssp", "async", "fp16", "int8", "topk",
                           "dgc", "mlp", "cnn", "softmax", "sgd", "nesterov", "adam", "fashion-mnist"})
    EXPECT_NE(o.out.find(std::string(kind) + ": "), std::string::npos) << kind;
  EXPECT_NE(o.out.find("[default sgd, momentum, nesterov: 0.01; adam: 0.001]"), std::string::npos) << o.out;
  for (const char* on : {"--overlap", "--standardize", "--dgc-masking"}) {
    const size_t at = o.out.find(std::string(on) + " ");
    ASSERT_NE(at, std::string::npos) << on;
    EXPECT_NE(o.out.substr(at, o.out.find('\n', o.out.find('\n', at) + 1) - at).find("[default: true]"),
              std::string::npos)
        << on;
  }
  EXPECT_EQ(o.out.find("{false}"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("/usr/share/datasets/fashion-mnist"), std::string::npos);
  EXPECT_EQ(run_ptrain("--help").exit_code, 0);
  const Outcome version = run_ptrain("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("ptrain 0."), std::string::npos) << version.out;
  const Outcome typo = run_ptrain("trian");
  EXPECT_NE(typo.exit_code, 0);
  EXPECT_NE(typo.err.find("did you mean train?"), std::string::npos) << typo.err;
}

TEST(PtrainCli, TrainsAndWritesTheRunReport) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const std::string report = dir.file("run.json");
  const Outcome o = run_ptrain(
      "train --workers 2 --train-samples 2048 --epochs 2 --batch 32 --log-every 4 --report " + report);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("epoch 2/2"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("summary"), std::string::npos) << o.out;
  std::ifstream in(report);
  const auto json = nlohmann::json::parse(in);
  EXPECT_EQ(json["schema_version"], 1);
  EXPECT_EQ(json["plan"]["run"]["workers"], 2);
  EXPECT_EQ(json["run"]["workers"], 2);
  EXPECT_EQ(json["plan"]["model"]["name"], "mlp");
  EXPECT_EQ(json["run"]["model"], "mlp");
  EXPECT_FALSE(json["started_at"].get<std::string>().empty());
  EXPECT_EQ(json["command_line"][1], "train");
  EXPECT_GT(json["host"]["cores"].get<int>(), 0);
  EXPECT_GT(json["loss_curve"][1]["seconds"].get<double>(), 0.0);
  EXPECT_EQ(json["epochs"].size(), 2u);
  EXPECT_EQ(json["loss_curve"][0]["step"], 4);
  EXPECT_EQ(json["comm"].size(), 2u);
  EXPECT_GT(json["comm"][0]["bytes_sent"].get<uint64_t>(), 0u);
  EXPECT_GT(json["epochs"][1]["test_accuracy"].get<double>(), 0.6);
  // Nothing but the report in the directory: no temporary file left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(PtrainCli, CompressionRatioIsPrintedAndReported) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const std::string report = dir.file("dgc.json");
  const Outcome o = run_ptrain(
      "train --workers 2 --train-samples 4096 --epochs 2 --optimizer momentum --lr 0.05 --compress dgc "
      "--dgc-warmup 1 --report " +
      report);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("compression  dgc: "), std::string::npos) << o.out;
  std::ifstream in(report);
  const auto json = nlohmann::json::parse(in);
  EXPECT_EQ(json["plan"]["codec"]["name"], "dgc");
  EXPECT_EQ(json["plan"]["codec"]["momentum_correction"], "auto");
  EXPECT_EQ(json["plan"]["optimizer"]["name"], "momentum");
  // Warm-up sends 25% .. 0.4% in the first epoch, then 0.1%: overall far less than dense.
  EXPECT_GT(json["compression"]["ratio"].get<double>(), 10.0);
  EXPECT_GT(json["comm"][0]["codec_selected"].get<uint64_t>(), 0u);
  EXPECT_GT(json["epochs"][1]["test_accuracy"].get<double>(), 0.6);
}

TEST(PtrainCli, CorruptDataIsAOneLineErrorNamingTheFile) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                           "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"})
    std::filesystem::copy_file(std::string(test::kFashionMnistDir) + "/" + name, dir.file(name));
  auto bytes = test::read_bytes(dir.file("train-images-idx3-ubyte.gz"));
  bytes.resize(bytes.size() / 2);
  test::write_bytes(dir.file("train-images-idx3-ubyte.gz"), bytes);
  const std::string report = dir.file("run.json");
  const Outcome o = run_ptrain("train --data " + dir.path().string() + " --report " + report);
  EXPECT_NE(o.exit_code, 0);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find("train-images-idx3-ubyte.gz"), std::string::npos) << o.err;
  EXPECT_FALSE(std::filesystem::exists(report));
}

}  // namespace
}  // namespace ptrain

namespace ptrain {
namespace {

TEST(PtrainCli, BenchAllreduceChecksEveryAlgorithm) {
  test::ScratchDir dir;
  const Outcome o =
      run_ptrain("bench allreduce --ranks 3 --sizes 4KiB:64KiB --iters 2 --csv " + dir.file("allreduce.csv"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  for (const char* algo : {"native", "ring", "hd", "tree", "hierarchical"})
    EXPECT_NE(o.out.find(algo), std::string::npos) << algo;
  EXPECT_EQ(o.out.find("WRONG"), std::string::npos) << o.out;
  const auto csv = test::read_bytes(dir.file("allreduce.csv"));
  // The header, the memory-copy ceiling, 5 algorithms x 3 sizes.
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 1 + 5 * 3);
  EXPECT_NE(o.out.find("memory copy ceiling"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("ceiling %"), std::string::npos) << o.out;
  // Each measurement's share of the memory-copy ceiling, the CSV's last field:
  // a percentage (with two decimals, a small all-reduce on a loaded machine
  // may well show 0.00, so nothing about its size is asserted).
  std::istringstream rows(std::string(csv.begin(), csv.end()));
  std::string row;
  std::getline(rows, row);
  EXPECT_TRUE(row.ends_with(",ceiling_pct")) << row;
  while (std::getline(rows, row))
    if (row.find("stream-copy") == std::string::npos) {
      const double pct = std::stod(row.substr(row.rfind(',') + 1));
      EXPECT_TRUE(std::isfinite(pct) && pct >= 0) << row;
    }
  const Outcome bad = run_ptrain("bench allreduce --sizes 4XB");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--sizes '4XB'"), std::string::npos) << bad.err;
}

TEST(PtrainCli, BenchCompressTimesEveryCodecBesideNthElement) {
  test::ScratchDir dir;
  const Outcome o = run_ptrain("bench compress --sizes 65536 --iters 2 --csv " + dir.file("compress.csv"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  for (const char* name : {"fp16", "int8", "topk", "dgc", "nth_element"})
    EXPECT_NE(o.out.find(name), std::string::npos) << name << "\n" << o.out;
  EXPECT_TRUE(std::filesystem::exists(dir.file("compress.csv")));
  const Outcome bad = run_ptrain("bench compress --codecs zip");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_EQ(lines(bad.err), 1u) << bad.err;
}

TEST(PtrainCli, WarnsWhenTheReferenceBlasIsLoaded) {
  const std::string reference_dir = "/usr/lib/x86_64-linux-gnu/blas";
  if (!std::filesystem::exists(reference_dir + "/libblas.so.3"))
    GTEST_SKIP() << "no reference BLAS installed";
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  const std::string args = "train --workers 1 --train-samples 256 --max-steps 2 --epochs 1";
  // The loader takes libblas.so.3 from LD_LIBRARY_PATH before the system alternative.
  const Outcome slow = run_ptrain_with_env("LD_LIBRARY_PATH=" + reference_dir, args);
  EXPECT_EQ(slow.exit_code, 0) << slow.err;
  EXPECT_NE(slow.err.find("warning: the reference BLAS is loaded"), std::string::npos) << slow.err;
  const Outcome fast = run_ptrain(args);
  EXPECT_EQ(fast.exit_code, 0) << fast.err;
  EXPECT_EQ(fast.err.find("reference BLAS"), std::string::npos) << fast.err;
  EXPECT_NE(fast.out.find("openblas"), std::string::npos) << fast.out;
}

}  // namespace
}  // namespace ptrain

namespace ptrain {
namespace {

std::string report_field(const std::string& path, const char* section, const char* field) {
  std::ifstream in(path);
  return nlohmann::json::parse(in)[section][field].dump();
}

using test::kMpirun;

// The summation order is the algorithm's, not the backend's: 4 threads and 4
// MPI processes end with the same bits after 50 steps.
TEST(PtrainCli, MpirunTrainsTheSameParametersAsThreads) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  test::ScratchDir dir;
  const std::string args =
      " --train-samples 8192 --epochs 1 --max-steps 50 --batch 16 --optimizer momentum "
      "--lr 0.05 --report ";
  // The CNN in 64 KiB buckets: 3 buckets, all-reduced by each rank's
  // communication thread while backward runs (MPI called from a second thread).
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ring", "--allreduce ring"},
      {"hd", "--allreduce hd"},
      {"tree", "--allreduce tree"},
      {"cnn-buckets", "--allreduce ring --model cnn --bucket-size 64KiB"}};
  for (const auto& [name, options] : cases) {
    const std::string local = dir.file("local-" + name + ".json");
    const std::string mpi = dir.file("mpi-" + name + ".json");
    const Outcome threads = run_ptrain("train --workers 4 " + options + args + local);
    ASSERT_EQ(threads.exit_code, 0) << threads.err;
    const Outcome ranks =
        run_ptrain_with_env(std::string(kMpirun) + " -np 4", "train " + options + args + mpi);
    ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
    EXPECT_NE(ranks.out.find("mpi backend (started by mpirun): 4 ranks"), std::string::npos) << ranks.out;
    EXPECT_EQ(report_field(mpi, "run", "backend"), "\"mpi\"");
    EXPECT_EQ(report_field(mpi, "summary", "steps"), "50");
    EXPECT_EQ(report_field(local, "summary", "final_params_fnv1a64"),
              report_field(mpi, "summary", "final_params_fnv1a64"))
        << name;
  }
  const std::string serial = dir.file("mpi-cnn-no-overlap.json");
  ASSERT_EQ(run_ptrain_with_env(std::string(kMpirun) + " -np 4",
                                "train " + cases.back().second + " --no-overlap" + args + serial)
                .exit_code,
            0);
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(serial))["plan"]["strategy"]["overlap"], false);
  EXPECT_EQ(report_field(serial, "summary", "final_params_fnv1a64"),
            report_field(dir.file("mpi-cnn-buckets.json"), "summary", "final_params_fnv1a64"));
}

TEST(PtrainCli, BenchAllreduceUnderMpirunChecksEveryAlgorithm) {
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  const Outcome o =
      run_ptrain_with_env(std::string(kMpirun) + " -np 3", "bench allreduce --sizes 4KiB:16KiB --iters 2");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("backend mpi, 3 ranks"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("transport: one host: shared memory only"), std::string::npos) << o.out;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 4 + 5 * 2) << o.out;  // only rank 0 prints
  EXPECT_EQ(o.out.find("WRONG"), std::string::npos) << o.out;
  // Worker threads in the ranks: 2 x 2 workers, every algorithm over them.
  const Outcome threads = run_ptrain_with_env(std::string(kMpirun) + " -np 2",
                                              "bench allreduce --local-workers 2 --sizes 4KiB:16KiB --iters 2");
  ASSERT_EQ(threads.exit_code, 0) << threads.err;
  EXPECT_NE(threads.out.find("backend mpi, 4 ranks (2 x 2 worker threads)"), std::string::npos) << threads.out;
  EXPECT_EQ(std::count(threads.out.begin(), threads.out.end(), '\n'), 4 + 5 * 2) << threads.out;
  EXPECT_EQ(threads.out.find("WRONG"), std::string::npos) << threads.out;
}

double report_number(const std::string& path, const char* section, const char* field) {
  std::ifstream in(path);
  const auto json = nlohmann::json::parse(in);
  return json[section].is_array() ? json[section].back()[field].get<double>() : json[section][field].get<double>();
}

// 2 ranks x 2 worker threads (--local-workers). The ring over them
// trains the bits of 4 threads; hierarchical sums each rank's threads first
// (another order than any flat algorithm's, so other bits): the same bits run
// to run, the ring's test loss within rounding, and on threads alone the
// shared-memory sum (native's bits). fp16 all-reduces between the ranks in
// halves.
TEST(PtrainCli, MpirunWithWorkerThreadsInEachRank) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  test::ScratchDir dir;
  const std::string args =
      " --train-samples 8192 --epochs 1 --max-steps 30 --batch 16 --optimizer momentum --lr 0.05 --report ";
  const std::string mpirun = std::string(kMpirun) + " --bind-to none -np 2";
  auto hash = [](const std::string& report) { return report_field(report, "summary", "final_params_fnv1a64"); };
  auto threads = [&](const std::string& name, const std::string& options) {
    const Outcome o = run_ptrain("train --workers 4 " + options + args + dir.file(name));
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return dir.file(name);
  };
  auto ranks = [&](const std::string& name, const std::string& options) {
    const Outcome o = run_ptrain_with_env(mpirun, "train --local-workers 2 " + options + args + dir.file(name));
    EXPECT_EQ(o.exit_code, 0) << o.err;
    EXPECT_NE(o.out.find("mpi backend (started by mpirun): 2 ranks x 2 worker threads (4 workers)"),
              std::string::npos)
        << o.out;
    return dir.file(name);
  };
  const std::string ring = ranks("ring.json", "--allreduce ring");
  EXPECT_EQ(hash(ring), hash(threads("threads-ring.json", "--allreduce ring")));
  EXPECT_EQ(report_field(ring, "run", "workers"), "4");
  EXPECT_EQ(report_field(ring, "run", "local_workers"), "2");
  const std::string hierarchical = ranks("hierarchical.json", "--allreduce hierarchical");
  EXPECT_EQ(hash(hierarchical), hash(ranks("hierarchical-again.json", "--allreduce hierarchical")));
  EXPECT_NEAR(report_number(hierarchical, "epochs", "test_loss"), report_number(ring, "epochs", "test_loss"), 1e-4);
  EXPECT_EQ(hash(threads("threads-hierarchical.json", "--allreduce hierarchical")),
            hash(threads("threads-native.json", "--allreduce native")));
  const std::string fp16 = ranks("fp16.json", "--allreduce hierarchical --compress fp16");
  EXPECT_NEAR(report_number(fp16, "epochs", "test_loss"),
              report_number(threads("threads-fp16.json", "--allreduce ring --compress fp16"), "epochs", "test_loss"),
              1e-3);
  EXPECT_NEAR(report_number(fp16, "compression", "ratio"), 2.0, 0.01);
  // Refused with one line: without mpirun, and for a strategy with one worker per rank.
  test::expect_one_line_errors(
      {{"train --local-workers 2", "--local-workers 2: runs worker threads inside MPI ranks, so it needs mpirun"},
       {"train --local-workers 2 --strategy ps-sync",
        "--local-workers 2: the ps-sync strategy runs one worker per MPI rank"}});
  const Outcome odd = run_ptrain_with_env(mpirun, "train --local-workers 2 --workers 6");
  EXPECT_NE(odd.exit_code, 0);
  EXPECT_NE(odd.err.find("--workers 6 does not match the 4 workers mpirun started (2 ranks x 2 threads: "),
            std::string::npos)
      << odd.err;
}

TEST(PtrainCli, AnErrorOnOneRankEndsTheMpiJob) {
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  const Outcome o = run_ptrain_with_env(std::string(kMpirun) + " -np 2", "train --workers 3");
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("--workers 3 does not match the 2 worker ranks"), std::string::npos) << o.err;
}

// 4 workers and 2 server shards as 6 MPI ranks train the same bits as
// 4 worker threads and 2 shard threads; every rank says what it is.
TEST(PtrainCli, MpirunRunsParameterServerShardsAsRanks) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  test::ScratchDir dir;
  const std::string args = " --strategy ps-sync --servers 2 --train-samples 4096 --epochs 1 --max-steps 30 --batch 16 --report ";
  const std::string local = dir.file("local.json"), mpi = dir.file("mpi.json");
  const Outcome threads = run_ptrain("train --workers 4" + args + local);
  ASSERT_EQ(threads.exit_code, 0) << threads.err;
  EXPECT_NE(threads.out.find("4 workers as threads and 2 server shard thread(s)"), std::string::npos) << threads.out;
  EXPECT_NE(threads.out.find("staleness    mean 0.00, p99 0, max 0"), std::string::npos) << threads.out;
  const Outcome ranks = run_ptrain_with_env(std::string(kMpirun) + " -np 6", "train" + args + mpi);
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  for (const char* role : {"rank 0 of 6: worker 0", "rank 3 of 6: worker 3", "rank 4 of 6: parameter server shard 0",
                           "rank 5 of 6: parameter server shard 1"})
    EXPECT_NE(ranks.out.find(role), std::string::npos) << role << "\n" << ranks.out;
  EXPECT_EQ(report_field(mpi, "parameter_server", "shards"), "2");
  EXPECT_EQ(report_field(mpi, "parameter_server", "updates"), "30");
  EXPECT_EQ(report_field(local, "summary", "final_params_fnv1a64"),
            report_field(mpi, "summary", "final_params_fnv1a64"));
  // Too few ranks for the shards is a one-line error.
  const Outcome none = run_ptrain_with_env(std::string(kMpirun) + " -np 2", "train --strategy async --servers 2");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("--servers 2: mpirun started 2 ranks, which leaves no worker"), std::string::npos)
      << none.err;
}

// Compressed pulls on Fashion-MNIST: the dense pulls' accuracy, the pulled
// bytes cut by the codec's ratio, in the report and on the terminal; and the
// same bits as ranks as on threads.
TEST(PtrainCli, CompressedPullsTrainFashionMnistAsDensePullsDo) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const std::string args =
      " --strategy ps-sync --workers 2 --train-samples 4096 --test-samples 1000 --epochs 1 --batch 32 --report ";
  const Outcome dense = run_ptrain("train" + args + dir.file("none.json"));
  ASSERT_EQ(dense.exit_code, 0) << dense.err;
  EXPECT_NE(dense.out.find("pulled a step\n"), std::string::npos) << dense.out;
  const auto dense_report = test::read_json(dir.file("none.json"));
  const double dense_accuracy = dense_report["summary"]["final_test_accuracy"].get<double>();
  const double dense_pulled = dense_report["parameter_server"]["bytes_pulled_per_step"].get<double>();
  EXPECT_DOUBLE_EQ(dense_report["parameter_server"]["pull_ratio"].get<double>(), 1.0);
  for (const auto& [pull, ratio] : std::vector<std::pair<std::string, double>>{{"fp16", 1.9}, {"int8", 3.5}}) {
    const Outcome o = run_ptrain("train --pull " + pull + args + dir.file(pull + ".json"));
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_NE(o.out.find("(pull " + pull + ": "), std::string::npos) << o.out;
    const auto report = test::read_json(dir.file(pull + ".json"));
    EXPECT_EQ(report["plan"]["pull"]["name"], pull);
    EXPECT_NEAR(report["summary"]["final_test_accuracy"].get<double>(), dense_accuracy, 0.015) << pull;
    EXPECT_GT(report["parameter_server"]["pull_ratio"].get<double>(), ratio) << pull;
    EXPECT_LT(report["parameter_server"]["bytes_pulled_per_step"].get<double>(), dense_pulled / ratio) << pull;
    EXPECT_EQ(report["parameter_server"]["bytes_pushed_per_step"], dense_report["parameter_server"]["bytes_pushed_per_step"]);
  }
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  const Outcome ranks = run_ptrain_with_env(std::string(kMpirun) + " -np 3", "train --pull int8" + args + dir.file("mpi.json"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  EXPECT_EQ(report_field(dir.file("mpi.json"), "summary", "final_params_fnv1a64"),
            report_field(dir.file("int8.json"), "summary", "final_params_fnv1a64"));
}

}  // namespace
}  // namespace ptrain

namespace ptrain {
namespace {

using test::read_json;

// a report holds the whole plan, and `--config REPORT` runs it again,
// bit for bit in a synchronous mode; flags given beside --config override it.
TEST(PtrainCli, ConfigReplaysAReportBitForBit) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const std::string first = dir.file("first.json"), again = dir.file("again.json");
  const Outcome a = run_ptrain(
      "train --workers 2 --train-samples 2048 --max-steps 40 --batch 16 --optimizer momentum --lr 0.05 "
      "--compress dgc --dgc-density 0.01 --allreduce ring --seed 5 --report " + first);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const Outcome b = run_ptrain("train --config " + first + " --report " + again);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto ra = read_json(first), rb = read_json(again);
  EXPECT_EQ(ra["plan"], rb["plan"]);
  EXPECT_EQ(ra["plan"]["strategy"]["allreduce"], "ring");
  EXPECT_EQ(ra["plan"]["codec"]["density"], 0.01);
  EXPECT_EQ(ra["summary"]["final_params_fnv1a64"], rb["summary"]["final_params_fnv1a64"]);
  EXPECT_EQ(ra["summary"]["steps"], 40);

  // Flags override the file; --print-plan shows the result without training.
  const Outcome shown = run_ptrain("train --config " + first + " --lr 0.2 --print-plan");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const auto plan = nlohmann::json::parse(shown.out);
  EXPECT_FLOAT_EQ(plan["optimizer"]["lr"].get<float>(), 0.2f);
  EXPECT_EQ(plan["codec"]["name"], "dgc");
  EXPECT_EQ(plan["run"]["seed"], 5);
  // Another strategy on the command line starts from that strategy's defaults.
  const Outcome other = run_ptrain("train --config " + first + " --strategy ssp --print-plan");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(nlohmann::json::parse(other.out)["strategy"]["staleness"], 2);
}

TEST(PtrainCli, PlanFilesAreCheckedFieldByField) {
  test::ScratchDir dir;
  const std::string plan = dir.file("plan.json");
  std::ofstream(plan) << R"({
    // comments are allowed
    "strategy": {"name": "ps-backup", "backup": 9, "servers": 2},
    "codec": {"name": "dgc", "densty": 0.1},
    "optimizer": {"name": "adam", "lr": -1},
    "run": {"workers": 4, "batch": 16}
  })";
  const Outcome o = run_ptrain("train --config " + plan);
  EXPECT_EQ(o.exit_code, 2);  // bad input
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find("codec.densty is not a field of codec (did you mean density?)"), std::string::npos) << o.err;
  std::ofstream(plan) << R"({"strategy": {"name": "ps-backup", "backup": 9}, "optimizer": {"name": "adam", "lr": -1},
                           "run": {"workers": 4}})";
  const Outcome two = run_ptrain("train --config " + plan);
  EXPECT_NE(two.err.find("--lr must be > 0 (got -1)"), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("--backup must be below the 4 workers"), std::string::npos) << two.err;
  std::ofstream(plan) << "{ not json";
  const Outcome bad = run_ptrain("train --config " + plan);
  EXPECT_NE(bad.err.find("not valid JSON"), std::string::npos) << bad.err;
  EXPECT_EQ(run_ptrain("train --config " + dir.path().string()).err.find("not a regular file") == std::string::npos,
            false);
}

// A GPU this build or this machine does not have: one line naming --device
// and what is missing, exit 2, before any data is read or anything written.
TEST(PtrainCli, AGpuThatIsNotThereIsRefusedBeforeAnyWork) {
  test::ScratchDir dir;
  const int gpus = visible_gpus();
  for (const std::string device : {"cuda", "cuda:0", "cuda:7"}) {
    if (device == "cuda:7" ? gpus > 7 : gpus > 0) continue;  // a machine that has it
    const Outcome o =
        run_ptrain("train --device " + device + " --report " + dir.file("r.json") + " --save " + dir.file("m.pt"));
    EXPECT_EQ(o.exit_code, kExitInput) << device << ": " << o.err;
    EXPECT_EQ(lines(o.err), 1u) << device << ": " << o.err;
    EXPECT_NE(o.err.find("--device " + device + ": "), std::string::npos) << o.err;
    // Without CUDA in this build's LibTorch, that is what it says.
    if (device_unavailable(ComputeDevice{true, 0}).find("no CUDA support") != std::string::npos) {
      EXPECT_NE(o.err.find("has no CUDA support"), std::string::npos) << o.err;
    }
    EXPECT_FALSE(std::filesystem::exists(dir.file("r.json")));
    EXPECT_FALSE(std::filesystem::exists(dir.file("m.pt")));
  }
}

TEST(PtrainCli, QuietPrintsNothingButStillReports) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const Outcome o = run_ptrain("train --quiet --workers 1 --train-samples 512 --max-steps 5 --report " +
                               dir.file("r.json"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(read_json(dir.file("r.json"))["summary"]["steps"], 5);
}

// --metrics: a JSON line per log_every steps of worker 0 and per committed
// checkpoint, flushed at once, appended to by the run that resumes; its path
// is checked like any output's.
TEST(PtrainCli, MetricsTellEachStepAndEachCommittedCheckpoint) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const std::string progress = dir.file("p.jsonl"), ckpt = dir.file("ckpt");
  // 15 steps an epoch; stopped after 12, with checkpoints at 5 and 10.
  const Outcome first = run_ptrain(
      "train -q --model softmax --workers 2 --epochs 1 --train-samples 1000 --max-steps 12 "
      "--checkpoint-every 5 --checkpoint-dir " +
      ckpt + " --log-every 1 --metrics " + progress);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  // The resumed run may write its own timeline, and go on in the same metrics file.
  const Outcome resumed = run_ptrain("train -q --max-steps 0 --resume " + ckpt + " --metrics " + progress +
                                     " --timeline " + dir.file("t.json"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("t.json")));
  std::vector<nlohmann::json> events;
  std::ifstream in(progress);
  for (std::string line; std::getline(in, line);) events.push_back(nlohmann::json::parse(line));
  std::vector<std::string> seen;  // "start", "step 1", "checkpoint 5", "end 12", ...
  for (const auto& e : events) {
    const std::string kind = e["event"];
    if (kind == "step" || kind == "checkpoint" || kind == "end")
      seen.push_back(kind + " " + std::to_string(e[kind == "end" ? "steps" : "step"].get<int>()));
    else if (kind == "start")
      seen.push_back(kind + " " +
                     (e["resumed_from"].is_null() ? "new" : e["resumed_from"].get<std::string>()));
    else
      seen.push_back(kind);
  }
  std::vector<std::string> expected = {"start new"};
  for (int s = 1; s <= 12; ++s) {
    expected.push_back("step " + std::to_string(s));
    // Committed while the next steps run: told at the first step after the commit.
    if (s == 5 || s == 10) expected.push_back("checkpoint " + std::to_string(s));
  }
  expected.push_back("epoch");  // the epoch --max-steps cut short is evaluated too
  expected.push_back("end 12");
  expected.push_back("start " + ckpt + "/step-000000000010.ckpt");
  for (int s = 11; s <= 15; ++s) expected.push_back("step " + std::to_string(s));
  expected.push_back("epoch");
  expected.push_back("checkpoint 15");
  expected.push_back("end 15");
  // Commits are told when worker 0 next looks: the same lines, a checkpoint maybe a few steps later.
  std::vector<std::string> sorted_seen = seen, sorted_expected = expected;
  std::sort(sorted_seen.begin(), sorted_seen.end());
  std::sort(sorted_expected.begin(), sorted_expected.end());
  EXPECT_EQ(sorted_seen, sorted_expected);
  for (size_t i = 0, last_step = 0; i < events.size(); ++i) {
    if (events[i]["event"] == "step") last_step = events[i]["step"];
    if (events[i]["event"] == "checkpoint") {
      EXPECT_LE(events[i]["step"].get<size_t>(), last_step);
    }
  }

  const Outcome to_stdout = run_ptrain(
      "train -q --model softmax --workers 1 --max-steps 7 --log-every 3 --train-samples 500 "
      "--metrics -");
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_EQ(lines(to_stdout.out), 5u) << to_stdout.out;  // start, steps 3 and 6, epoch, end
  test::expect_one_line_errors(
      {{"train --max-steps 1 --metrics " + dir.path().string(), "is a directory"},
       {"train --max-steps 1 --metrics /nonexistent/p.jsonl", "does not exist"},
       {"train --max-steps 1 --timeline -", "--timeline - : a timeline is written whole"},
       {"train --max-steps 1 --timeline x.json --metrics x.json", "is also --metrics"}});
}

// Commands that run in one process refuse mpirun before MPI starts, and a
// strategy that runs only as threads refuses it at once.
TEST(PtrainCli, SingleProcessWorkRefusesMpirun) {
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  for (const char* command : {"shm", "sweep --csv x.csv", "simulate", "bench compress"}) {
    const Outcome o = run_ptrain_with_env(std::string(kMpirun) + " -np 2", command);
    EXPECT_NE(o.exit_code, 0) << command;
    EXPECT_NE(o.err.find("runs in one process; start it without mpirun"), std::string::npos) << command << o.err;
  }
  const Outcome seq = run_ptrain_with_env(std::string(kMpirun) + " -np 2", "train --strategy sequential");
  EXPECT_NE(seq.exit_code, 0);
  EXPECT_NE(seq.err.find("strategy sequential: runs its workers as threads of one process only"), std::string::npos)
      << seq.err;
}

}  // namespace
}  // namespace ptrain

namespace ptrain {
namespace {

// data a Python user writes without ptrain, as NumPy arrays.
TEST(PtrainCli, TrainsOnNumpyArrays) {
  if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) GTEST_SKIP() << "no numpy";
  test::ScratchDir dir;
  const std::string script = dir.file("make.py");
  std::ofstream(script) << "import numpy as np, sys\n"
                           "d = sys.argv[1]\n"
                           "rng = np.random.default_rng(3)\n"
                           "centres = rng.normal(0, 3, (4, 6)).astype(np.float32)\n"
                           "for split, n in (('train', 800), ('test', 200)):\n"
                           "    y = np.arange(n) % 4\n"
                           "    x = centres[y] + rng.normal(0, 1, (n, 6)).astype(np.float32)\n"
                           "    np.save(f'{d}/{split}_x.npy', x)\n"
                           "    np.save(f'{d}/{split}_y.npy', y.astype(np.int64))\n";
  ASSERT_EQ(std::system(("/usr/bin/python3 " + script + " " + dir.path().string()).c_str()), 0);
  const std::string files = " --train-features " + dir.file("train_x.npy") + " --train-labels " +
                            dir.file("train_y.npy") + " --test-features " + dir.file("test_x.npy") +
                            " --test-labels " + dir.file("test_y.npy");
  const Outcome o = run_ptrain("train --data-set npy" + files +
                               " --model softmax --workers 2 --batch 16 --epochs 3 --optimizer sgd --lr 0.1 --report " +
                               dir.file("r.json"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto report = read_json(dir.file("r.json"));
  EXPECT_EQ(report["plan"]["data"]["name"], "npy");
  EXPECT_EQ(report["run"]["train_samples"], 800);
  EXPECT_GT(report["summary"]["final_test_accuracy"].get<double>(), 0.9);
  // A missing array is named by its flag, before any work; a flag of another data set is refused.
  const Outcome missing = run_ptrain("train --data-set npy --train-features /no/x.npy --model softmax");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(lines(missing.err), 1u) << missing.err;
  EXPECT_NE(missing.err.find("--train-features: /no/x.npy: no such file"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("--train-labels needs the path of a .npy file"), std::string::npos) << missing.err;
  const Outcome other = run_ptrain("train --train-features x.npy");
  EXPECT_NE(other.err.find("--train-features: data fashion-mnist has no such option (it is for data npy)"),
            std::string::npos)
      << other.err;
}

}  // namespace
}  // namespace ptrain

namespace ptrain {
namespace {

// Exit statuses tell a shell loop or a scheduler what to do: 2 fix the input,
// 3 the run diverged (its report written), 75 resume from the last checkpoint.
TEST(PtrainCli, ExitStatusesSayWhetherToFixTheInputOrRetry) {
  test::ScratchDir dir;
  const std::string small = "train --model softmax --workers 2 --epochs 1 --train-samples 2000 -q ";
  EXPECT_EQ(run_ptrain(small + "--batch 0").exit_code, kExitInput);

  const Outcome diverged = run_ptrain(small + "--optimizer sgd --lr 1e38 --report " + dir.file("d.json"));
  EXPECT_EQ(diverged.exit_code, kExitDiverged) << diverged.err;
  EXPECT_NE(diverged.err.find("training diverged: worker "), std::string::npos) << diverged.err;
  const auto report = nlohmann::json::parse(std::ifstream(dir.file("d.json")));
  EXPECT_EQ(report["outcome"]["status"], "diverged");

  // Worker 1 computes so slowly that worker 0 gives up waiting for it.
  const Outcome lost = run_ptrain(small + "--straggler 1:100000 --comm-timeout 0.3");
  EXPECT_EQ(lost.exit_code, kExitRetry) << lost.err;
  EXPECT_NE(lost.err.find("timed out after 0.3 s waiting for worker(s) 1"), std::string::npos) << lost.err;

  // Rolled back to the start with a usable step, the run completes.
  const Outcome rolled = run_ptrain(small + "--optimizer sgd --lr 1e38 --on-diverge rollback --rollback-lr-scale 1e-39 " +
                                    "--checkpoint-dir " + dir.file("ckpt") + " --report " + dir.file("r.json"));
  EXPECT_EQ(rolled.exit_code, kExitOk) << rolled.err;
  EXPECT_NE(rolled.err.find("rolling back from the start with learning rate 0.1 (rollback 1 of 3)"),
            std::string::npos)
      << rolled.err;
  const auto after = nlohmann::json::parse(std::ifstream(dir.file("r.json")));
  EXPECT_EQ(after["outcome"]["recoveries"].size(), 1u);
  EXPECT_GT(after["summary"]["final_test_accuracy"].get<double>(), 0.6);
}

}  // namespace
}  // namespace ptrain

namespace ptrain {
namespace {

nlohmann::json printed_plan(const std::string& args) {
  const Outcome o = run_ptrain("train " + args + " --print-plan");
  EXPECT_EQ(o.exit_code, 0) << args << ": " << o.err;
  return o.exit_code == 0 ? nlohmann::json::parse(o.out) : nlohmann::json();
}

// A switch takes true/false, 1/0, yes/no or on/off and means what it says
// (--pin=false turned pinning on; --pin=bogus ended in std::terminate; --pin
// is --placement now, whose switch forms are --overlap's here).
TEST(PtrainCli, SwitchesTakeTheirValueAndMeanIt) {
  EXPECT_EQ(printed_plan("--standardize=false")["data"]["standardize"], false);
  EXPECT_EQ(printed_plan("--standardize=0")["data"]["standardize"], false);
  EXPECT_EQ(printed_plan("--overlap --overlap=off")["strategy"]["overlap"], false);  // the last one given
  EXPECT_EQ(printed_plan("--overlap=YES")["strategy"]["overlap"], true);
  EXPECT_EQ(printed_plan("--overlap")["strategy"]["overlap"], true);
  EXPECT_EQ(printed_plan("--overlap=no")["strategy"]["overlap"], false);
  EXPECT_EQ(printed_plan("--no-overlap")["strategy"]["overlap"], false);
  EXPECT_EQ(printed_plan("--no-standardize=false")["data"]["standardize"], true);
  EXPECT_EQ(printed_plan("--compress dgc --dgc-masking=false")["codec"]["masking"], false);
  test::expect_one_line_errors({
      {"train --overlap=bogus", "--overlap: 'bogus' is not a switch value (true/false, 1/0, yes/no, on/off)"},
      {"train --overlap=2", "--overlap: '2' is not a switch value"},
      {"train --overlap=", "--overlap=: an empty value"},
      {"train --no-overlap=maybe", "--no-overlap: 'maybe' is not a switch value"},
      {"train --compress dgc --dgc-accumulation=x", "--dgc-accumulation: 'x' is not a switch value"},
      {"train --strategy async --async-lr-divide=x", "--async-lr-divide: 'x' is not a switch value"},
      {"train --print-plan=x", "--print-plan: 'x' is not a switch value"},
      {"simulate --overlap=x", "--overlap: 'x' is not a switch value"},
  });
}

// --placement and --topology: their plan fields, the summary's line, and
// their refusals, one line each naming the flag, before any training.
TEST(PtrainCli, PlacementFlagsPlanPrintAndRefuse) {
  const nlohmann::json plan = printed_plan("--placement spread --topology 'pack:2 node:1 core:2 pu:1'");
  EXPECT_EQ(plan["run"]["placement"], "spread");
  EXPECT_EQ(plan["run"]["topology"], "pack:2 node:1 core:2 pu:1");
  EXPECT_EQ(printed_plan("")["run"]["placement"], "compact");
  const Outcome o = run_ptrain(
      "train --model softmax --workers 2 --train-samples 300 --epochs 1 --placement spread --topology 'pack:1 group:4 "
      "node:1 core:2 pu:2'");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("placement    spread on synthetic 'pack:1 group:4 node:1 core:2 pu:2' (4 NUMA nodes, 8 "
                       "cores), planned, not bound (not this machine): worker 0 cpu 0 node 0, worker 1 cpu 4 node 1"),
            std::string::npos)
      << o.out;
  test::ScratchDir dir;
  std::ofstream(dir.file("junk.xml")) << "<topology";
  std::ofstream(dir.file("old.json")) << R"({"run": {"pin": true, "placement": "none"}})";
  test::expect_one_line_errors({
      {"train --placement scatter", "--placement: expected one of none, compact, spread, got 'scatter'"},
      {"shm --placement scatter", "--placement: expected one of none, compact, spread"},
      {"train --topology bogus:3", "--topology: 'bogus:3': not a synthetic topology hwloc accepts"},
      {"train --topology /no/such/t.xml", "--topology: '/no/such/t.xml': no such file"},
      {"train --topology " + dir.file("junk.xml"), "not an XML topology hwloc can read"},
      {"train --topology ''", "--topology: an empty path"},
      {"train --config " + dir.file("old.json"), "run.pin is the older name of run.placement"},
      {"train --pin", "--pin (it is --placement compact now)"},
      {"train --no-pin", "--no-pin (it is --placement none now)"},
  });
}

// An option's value is never empty: CLI11 read "" as the default.
TEST(PtrainCli, EveryOptionRefusesAnEmptyValue) {
  test::expect_one_line_errors({
      {"simulate --backward-fraction ''", "--backward-fraction: an empty value"},
      {"simulate --latency ''", "--latency: an empty value"},
      {"simulate --latency=", "--latency=: an empty value"},
      {"simulate --straggler-mean ''", "--straggler-mean: an empty value"},
      {"bench allreduce --ranks ''", "--ranks: an empty value"},
      {"bench allreduce --warmup ''", "--warmup: an empty value"},
      {"bench compress --warmup ''", "--warmup: an empty value"},
      {"train --batch ''", "--batch: an empty value"},
  });
}

// A command offers only the options it uses: the rest are unknown to it, and
// --help lists what it takes, with its own defaults.
TEST(PtrainCli, ACommandOffersOnlyTheOptionsItUses) {
  test::ScratchDir dir;
  const std::string sweep = "sweep --strategies hogwild --threads 2 --batch 16 --csv " + dir.file("s.csv") + " ";
  test::expect_one_line_errors({
      {sweep + "--backup -1", "--backup"},
      {sweep + "--servers text", "--servers"},
      {sweep + "--staleness nan", "--staleness"},
      {sweep + "--allreduce bogus", "--allreduce"},
      {sweep + "--compress dgc", "--compress"},
      {sweep + "--lr inf", "--lr must be finite (got inf)"},
      {"shm --threads 2 --workers -1", "--workers"},
      {"shm --straggler 1:2", "--straggler"},
      {"shm --log-every 3", "--log-every: ptrain shm has no such option"},
      {"train --strategy hogwild --log-every 3", "--log-every applies to the trainer's workers"},
      {"simulate --exchange hierarchical --local-workers -1", "--local-workers: Value -1 not in range"},
  });
  EXPECT_FALSE(std::filesystem::exists(dir.file("s.csv")));
  const Outcome shm = run_ptrain("shm --help");
  EXPECT_EQ(shm.exit_code, 0);
  for (const char* absent : {"hybrid: ", "ps-sync: ", "--straggler", "--compress", "--dgc-density", "--staleness",
                             "--transport", "--workers"})
    EXPECT_EQ(shm.out.find(absent), std::string::npos) << absent;
  for (const char* present : {"leashed: ", "hogwild: ", "[default: leashed]", "--threads", "[default: sgd]"})
    EXPECT_NE(shm.out.find(present), std::string::npos) << present;
  const size_t batch = shm.out.find("--batch ");
  ASSERT_NE(batch, std::string::npos);
  EXPECT_NE(shm.out.substr(batch, 200).find("[default: 16]"), std::string::npos) << shm.out.substr(batch, 200);
  const Outcome train = run_ptrain("train --help");
  const size_t limit = train.out.find("--time-limit ");
  ASSERT_NE(limit, std::string::npos);
  EXPECT_NE(train.out.substr(limit, 300).find("(strategies that stop on time: "), std::string::npos)
      << train.out.substr(limit, 300);
}

// A plan file with a million unknown keys is one line of a few kilobytes at
// most (it was one of 37 MB, naming every key).
TEST(PtrainCli, AnErrorLineIsBounded) {
  test::ScratchDir dir;
  std::string junk = "{";
  for (int i = 0; i < 200000; ++i) junk += (i ? ",\"k" : "\"k") + std::to_string(i) + "\": 1";
  junk += "}";
  std::ofstream(dir.file("plan.json")) << junk;
  const Outcome o = run_ptrain("train --config " + dir.file("plan.json"));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(test::lines(o.err), 1u);
  EXPECT_LT(o.err.size(), 4096u) << o.err.substr(0, 300);
  EXPECT_NE(o.err.find(" more"), std::string::npos) << o.err.substr(0, 300);
}

// Under mpirun a refusal is said once, by rank 0, and the job ends with its
// status: no copy per rank, no MPI_ABORT banner (mpirun -q: no launcher note either).
TEST(PtrainCli, UnderMpirunARefusalIsOneLine) {
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  for (const char* args : {"train --strategy sequential", "train --epochs nan", "train --overlap=bogus", "shm"}) {
    const Outcome o = run_ptrain_with_env(std::string(kMpirun) + " -q -np 3", args);
    EXPECT_EQ(o.exit_code, 2) << args << ": " << o.err;
    EXPECT_EQ(test::lines(o.err), 1u) << args << ": " << o.err;
    EXPECT_EQ(o.err.rfind("ptrain: error: ", 0), 0u) << args << ": " << o.err;
  }
}

}  // namespace
}  // namespace ptrain

namespace ptrain {
namespace {

// On a terminal the progress bar says how long training has left; in a log
// (not a terminal) the lines hold no escape codes and no bar. The summary
// says where the progress lines went.
TEST(PtrainCli, ProgressShowsTheTimeLeftOnATerminalAndPlainLinesElsewhere) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  if (std::system("command -v script >/dev/null") != 0) GTEST_SKIP() << "no script(1) for a terminal";
  test::ScratchDir dir;
  const std::string args = " train --workers 2 --epochs 3 --train-samples 30000 --metrics " + dir.file("p.jsonl");
  // script(1) runs the command on a pseudo-terminal and copies what it printed.
  const std::string command =
      "script -qec \"" + std::string(PTRAIN_EXE) + args + "\" /dev/null >" + dir.file("terminal.txt") + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const auto bytes = test::read_bytes(dir.file("terminal.txt"));
  const std::string terminal(bytes.begin(), bytes.end());
  EXPECT_NE(terminal.find('\r'), std::string::npos) << terminal.substr(0, 400);
  EXPECT_NE(terminal.find("  ETA 0:"), std::string::npos) << terminal.substr(0, 400);
  const Outcome plain = run_ptrain(args.substr(1));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(plain.out.find("ETA"), std::string::npos);
  EXPECT_NE(plain.out.find("  metrics      " + dir.file("p.jsonl") + " (JSON lines"), std::string::npos) << plain.out;
}

// Colours only on a terminal that is the user's: error and warning words in
// colour there, none with NO_COLOR set, and under mpirun (whose ranks write
// to a pseudo-terminal even for a log) neither colours nor a redrawn bar.
TEST(PtrainCli, ColoursOnlyOnATerminalAndNeverWithNoColor) {
  if (std::system("command -v script >/dev/null") != 0) GTEST_SKIP() << "no script(1) for a terminal";
  test::ScratchDir dir;
  auto on_terminal = [&](const std::string& env, const std::string& command) {
    const std::string line = "script -qec \"" + env + " " + command + "\" /dev/null >" + dir.file("t.txt") + " 2>&1";
    std::system(line.c_str());
    const auto bytes = test::read_bytes(dir.file("t.txt"));
    return std::string(bytes.begin(), bytes.end());
  };
  const std::string refused = std::string(PTRAIN_EXE) + " train --batch 0";
  EXPECT_NE(on_terminal("", refused).find("\x1b[1;31merror\x1b[0m: --batch"), std::string::npos);
  const std::string plain = on_terminal("NO_COLOR=1", refused);
  EXPECT_EQ(plain.find('\x1b'), std::string::npos) << plain;
  EXPECT_NE(plain.find("ptrain: error: --batch"), std::string::npos) << plain;
  if (std::system("command -v mpirun >/dev/null") != 0 || !std::filesystem::exists(test::kFashionMnistDir)) return;
  const std::string ranks = on_terminal(std::string(kMpirun) + " -np 2",
                                        std::string(PTRAIN_EXE) + " train --train-samples 3000 --epochs 1");
  EXPECT_NE(ranks.find("epoch 1/1"), std::string::npos) << ranks;
  EXPECT_EQ(ranks.find("\x1b"), std::string::npos) << ranks;
  EXPECT_EQ(ranks.find("ETA"), std::string::npos) << ranks;
}

}  // namespace
}  // namespace ptrain
