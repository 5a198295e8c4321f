// The ptrain executable as a user meets it: errors, help and a small real run.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

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
      {"--lr 0", "--lr must be > 0"},
      {"--lr -0.5", "--lr must be > 0"},
      {"--workers 0", "--workers must be at least 1"},
      {"--model resnet9000", "--model: unknown model 'resnet9000'"},
      {"--strategy gossip", "--strategy: unknown strategy 'gossip'"},
      {"--optimizer rmsprop", "rmsprop"},
      {"--allreduce gossip", "--allreduce: unknown algorithm 'gossip'"},
      {"--bucket-size 0", "--bucket-size '0': expected a positive size"},
      {"--bucket-size 12XB", "--bucket-size '12XB'"},
      {"--compress zip", "--compress: unknown codec 'zip'"},
      {"--compress dgc --dgc-density 0", "--dgc-density must be in (0, 1]"},
      {"--compress topk --topk-ratio 1.5", "--topk-ratio must be in (0, 1]"},
      {"--compress int8 --int8-rounding up", "--int8-rounding: unknown rounding 'up'"},
      {"--compress fp16 --strategy sequential", "--compress fp16: the sequential strategy does not compress gradients"},
      {"--strategy ps-backup --workers 4 --backup 4", "--backup 4: ps-backup needs 1 <= b < W = 4"},
      {"--strategy ps-sync --servers 0", "--servers must be at least 1 (got 0)"},
      {"--strategy async --stale-policy drop:x", "--stale-policy 'drop:x': expected none, drop:T"},
      {"--strategy ps-sync --stale-policy scale", "--stale-policy scale: only ssp and async"},
      {"--strategy ssp --async-lr-divide", "--async-lr-divide: only for --strategy async"},
      {"--strategy hybrid --time-limit 5", "--time-limit: only the parameter-server strategies"},
      {"--workers 4 --straggler 9:2", "--straggler '9:2': no worker 9 among 4 workers"},
      {"--straggler 1:0.5", "--straggler '1:0.5': expected RANK:FACTOR with FACTOR >= 1"},
      {"--straggler fast", "--straggler 'fast'"},
      {"--hidden 128,,64", "--hidden '128,,64'"},
      {"--momentum 1.5 --optimizer momentum", "--momentum"},
      {"--weight-decay -1", "--weight-decay"},
      {"--epochs 0", "--epochs must be at least 1"},
      {"--batch 0", "--batch must be at least 1"},
      {"--data " + empty.path().string(), "missing train-images-idx3-ubyte"},
      {"--data /no/such/dir", "/no/such/dir"},
      {"--report /no/such/dir/r.json", "--report /no/such/dir/r.json"},
      {"--workers 4 --train-samples 100 --batch 26", "--batch 26 is larger than each worker's shard of 25"},
      {"--no-such-flag", "--no-such-flag"},
      {"--workers many", "--workers"},
  };
  for (const auto& c : cases) {
    const Outcome o = run_ptrain("train " + c.args);
    EXPECT_NE(o.exit_code, 0) << c.args;
    EXPECT_EQ(lines(o.err), 1u) << c.args << ": " << o.err;
    EXPECT_NE(o.err.find("ptrain: error: "), std::string::npos) << c.args << ": " << o.err;
    EXPECT_NE(o.err.find(c.expected), std::string::npos) << c.args << ": " << o.err;
  }
}

TEST(PtrainCli, HelpListsEveryOptionWithItsDefault) {
  const Outcome o = run_ptrain("train --help");
  EXPECT_EQ(o.exit_code, 0);
  for (const char* option : {"--model", "--workers", "--strategy", "--optimizer", "--lr", "--momentum",
                             "--weight-decay", "--batch", "--epochs", "--seed", "--data", "--report"})
    EXPECT_NE(o.out.find(option), std::string::npos) << option;
  EXPECT_NE(o.out.find("adam"), std::string::npos);
  EXPECT_NE(o.out.find("0.001"), std::string::npos);
  EXPECT_NE(o.out.find("/usr/share/datasets/fashion-mnist"), std::string::npos);
  EXPECT_EQ(run_ptrain("--help").exit_code, 0);
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
  EXPECT_EQ(json["config"]["workers"], 2);
  EXPECT_EQ(json["config"]["model"], "mlp");
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
  EXPECT_EQ(json["config"]["compress"]["codec"], "dgc");
  EXPECT_EQ(json["config"]["compress"]["optimizer_applied"], "sgd");  // the codec applies the momentum
  EXPECT_TRUE(json["config"]["compress"]["momentum_correction"].get<bool>());
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
  for (const char* algo : {"native", "ring", "hd", "tree"})
    EXPECT_NE(o.out.find(algo), std::string::npos) << algo;
  EXPECT_EQ(o.out.find("WRONG"), std::string::npos) << o.out;
  const auto csv = test::read_bytes(dir.file("allreduce.csv"));
  // The header, the memory-copy ceiling, 4 algorithms x 3 sizes.
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 1 + 4 * 3);
  EXPECT_NE(o.out.find("memory copy ceiling"), std::string::npos) << o.out;
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

const char* kMpirun = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe";

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
    EXPECT_EQ(report_field(mpi, "config", "backend"), "\"mpi\"");
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
  EXPECT_EQ(report_field(serial, "config", "overlap"), "false");
  EXPECT_EQ(report_field(serial, "summary", "final_params_fnv1a64"),
            report_field(dir.file("mpi-cnn-buckets.json"), "summary", "final_params_fnv1a64"));
}

TEST(PtrainCli, BenchAllreduceUnderMpirunChecksEveryAlgorithm) {
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  const Outcome o =
      run_ptrain_with_env(std::string(kMpirun) + " -np 3", "bench allreduce --sizes 4KiB:16KiB --iters 2");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("backend mpi, 3 ranks"), std::string::npos) << o.out;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 3 + 4 * 2) << o.out;  // only rank 0 prints
  EXPECT_EQ(o.out.find("WRONG"), std::string::npos) << o.out;
}

TEST(PtrainCli, AnErrorOnOneRankEndsTheMpiJob) {
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  const Outcome o = run_ptrain_with_env(std::string(kMpirun) + " -np 2", "train --workers 3");
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("--workers 3 does not match the 2 worker ranks"), std::string::npos) << o.err;
}

// Issue 5: 4 workers and 2 server shards as 6 MPI ranks train the same bits as
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

}  // namespace
}  // namespace ptrain
