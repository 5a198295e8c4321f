// The run plan: its checks name fields and find every problem at once, and its
// JSON form reads back to the same plan.
#include "plan/run_plan.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <limits>

#include "plan/plan_json.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

TEST(RunPlan, TheDefaultsAreAValidPlan) { EXPECT_TRUE(check_plan(RunPlan{}).empty()) << check_plan(RunPlan{}).joined(); }

TEST(RunPlan, ChecksReportEveryProblemAtOnceNamingFields) {
  RunPlan plan;
  plan.run.batch = 0;
  plan.run.epochs = -1;
  plan.run.comm_timeout = std::numeric_limits<double>::infinity();
  plan.run.workers = 4;
  plan.optimizer = AdamOptions{.lr = 0};
  PsBackupOptions backup;
  backup.backup = 4;
  plan.strategy = backup;
  DgcOptions dgc;
  dgc.density = 2;
  plan.codec = dgc;
  plan.model = MlpOptions{{128, 0}};
  const Problems p = check_plan(plan);
  const std::string all = p.joined();
  for (const char* expected :
       {"run.batch must be at least 1 (got 0)", "run.epochs must be in (0, 1e+06] (got -1)",
        "run.comm_timeout must be in [0.001, 1e+06] (got inf)", "optimizer.lr must be > 0 (got 0)",
        "strategy.backup must be below the 4 workers", "codec.density must be in (0, 1] (got 2)",
        "model.hidden values must be positive (got 0)"})
    EXPECT_NE(all.find(expected), std::string::npos) << expected << "\n" << all;
  EXPECT_EQ(all.find('\n'), std::string::npos);
  EXPECT_EQ(p.list().size(), 7u) << all;
}

// Found by tools/bad_inputs.sh: numbers whose range had no end. 1e300 epochs
// overflowed the step count (llround), a timeout of 1e-9 s rounded to no time
// at all, and an infinite DGC warm-up was taken.
TEST(RunPlan, NumbersWithoutAnEndAreRefused) {
  RunPlan plan;
  plan.run.epochs = 1e300;
  plan.run.comm_timeout = 1e-9;
  DgcOptions dgc;
  dgc.warmup = std::numeric_limits<double>::infinity();
  plan.codec = dgc;
  const std::string all = check_plan(plan).joined();
  for (const char* expected : {"run.epochs must be in (0, 1e+06] (got 1e+300)",
                               "run.comm_timeout must be in [0.001, 1e+06] (got 1e-09)",
                               "codec.warmup must be in [0, 1e+06] (got inf)"})
    EXPECT_NE(all.find(expected), std::string::npos) << expected << "\n" << all;
}

TEST(RunPlan, InapplicableCombinationsAreRefusedWithTheReason) {
  RunPlan plan;
  plan.strategy = SequentialOptions{};
  plan.codec = TopkOptions{};
  plan.run.time_limit = 10;
  plan.run.straggler_factor = 2;
  const std::string all = check_plan(plan).joined();
  EXPECT_NE(all.find("codec: the sequential strategy exchanges no gradients to compress (got codec topk)"),
            std::string::npos) << all;
  EXPECT_NE(all.find("run.time_limit applies to the strategies that stop on time"), std::string::npos) << all;
  EXPECT_NE(all.find("run.straggler_factor applies only with a straggler"), std::string::npos) << all;
  plan = RunPlan{};
  plan.strategy = AsyncOptions{};
  plan.run.time_limit = 10;
  EXPECT_TRUE(check_plan(plan).empty()) << check_plan(plan).joined();
}

TEST(RunPlan, MicrobatchesNeedABatchAsLargeAndTheTrainersWorkers) {
  RunPlan plan;
  plan.run.batch = 8;
  plan.run.microbatches = 8;
  EXPECT_TRUE(check_plan(plan).empty()) << check_plan(plan).joined();
  plan.run.microbatches = 9;
  EXPECT_EQ(check_plan(plan).joined(),
            "run.microbatches: 9 micro-batches need a batch of at least 9 samples per worker (run.batch is 8)");
  plan.run.microbatches = 2;
  plan.strategy = HogwildOptions{};
  EXPECT_NE(check_plan(plan).joined().find("run.microbatches applies to the trainer's workers; the shared-memory "
                                           "strategy hogwild applies each thread's gradient as it comes"),
            std::string::npos)
      << check_plan(plan).joined();
}

// Gloo carries MPI ranks' all-reduces: not for threads, not for parameter servers.
TEST(RunPlan, GlooTransportNeedsRanksAndAStrategyWithoutServers) {
  RunPlan plan;
  plan.run.transport = Transport::Gloo;
  EXPECT_TRUE(check_plan(plan).empty()) << check_plan(plan).joined();  // backend auto: make_world decides
  plan.run.backend = Backend::Local;
  plan.strategy = PsSyncOptions{};
  const std::string all = check_plan(plan).joined();
  EXPECT_NE(all.find("run.transport gloo: carries MPI ranks' all-reduces (under mpirun); threads of one process "
                     "share memory instead"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("run.transport gloo: carries the all-reduces between worker ranks; the ps-sync strategy's "
                     "traffic goes to its parameter servers, over MPI (use transport mpi)"),
            std::string::npos)
      << all;
  plan.run.backend = Backend::Mpi;
  plan.strategy = HybridOptions{};
  EXPECT_TRUE(check_plan(plan).empty()) << check_plan(plan).joined();
  // The default, auto, picks per run (make_world): never a problem, servers or not.
  plan.run.transport = Transport::Auto;
  plan.strategy = PsSyncOptions{};
  EXPECT_EQ(RunControls{}.transport, Transport::Auto);
  EXPECT_TRUE(check_plan(plan).empty()) << check_plan(plan).joined();
}

// Worker threads inside MPI ranks: under mpirun (not the local backend), for
// the strategy that runs them, and a worker count they divide.
TEST(RunPlan, LocalWorkersNeedRanksAndTheHybridStrategy) {
  RunPlan plan;
  plan.run.local_workers = 2;
  EXPECT_TRUE(check_plan(plan).empty()) << check_plan(plan).joined();  // backend auto: make_world decides
  plan.run.backend = Backend::Local;
  plan.strategy = PsSyncOptions{};
  plan.run.workers = 5;
  const std::string all = check_plan(plan).joined();
  EXPECT_NE(all.find("run.local_workers 2: runs worker threads inside MPI ranks (under mpirun); on threads alone the "
                     "workers are run.workers"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("run.local_workers 2: the ps-sync strategy runs one worker per MPI rank"), std::string::npos)
      << all;
  EXPECT_NE(all.find("run.workers 5 is not a multiple of run.local_workers 2"), std::string::npos) << all;
  plan = RunPlan{};
  plan.run.local_workers = 0;
  EXPECT_NE(check_plan(plan).joined().find("run.local_workers"), std::string::npos);
}

TEST(RunPlan, ADeviceIsCpuCudaOrCudaNAndTheSharedMemoryStrategiesStayOnTheCpu) {
  RunPlan plan;
  for (const char* ok : {"cpu", "cuda", "cuda:1"}) {
    plan.run.device = ok;
    EXPECT_TRUE(check_plan(plan).empty()) << ok << ": " << check_plan(plan).joined();
  }
  plan.run.device = "gpu\n0";
  EXPECT_EQ(check_plan(plan).joined(), "run.device: expected cpu, cuda or cuda:N, got 'gpu\\x0a0'");
  plan.run.device = "cuda";
  plan.strategy = HogwildOptions{};
  EXPECT_NE(check_plan(plan).joined().find("run.device cuda: the hogwild strategy is a CPU algorithm"),
            std::string::npos)
      << check_plan(plan).joined();
  plan.strategy = HybridOptions{};
  plan.model = SoftmaxOptions{};
  EXPECT_NE(check_plan(plan).joined().find("run.device cuda: model softmax is ptrain's own CPU code"),
            std::string::npos)
      << check_plan(plan).joined();
}

TEST(RunPlan, DgcTakesOverTheMomentumOfTheMomentumOptimizerOnly) {
  RunPlan plan;
  plan.codec = DgcOptions{};
  plan.optimizer = MomentumOptions{.lr = 0.05f, .momentum = 0.8f};
  Effective e = effective_optimizer_and_codec(plan);
  EXPECT_EQ(e.optimizer.kind, OptimizerKind::Sgd);
  EXPECT_FLOAT_EQ(e.optimizer.lr, 0.05f);
  EXPECT_FLOAT_EQ(e.codec.momentum, 0.8f);
  plan.optimizer = NesterovOptions{};
  e = effective_optimizer_and_codec(plan);
  EXPECT_EQ(e.optimizer.kind, OptimizerKind::Nesterov);
  EXPECT_EQ(e.codec.momentum, 0.0f);
  std::get<DgcOptions>(plan.codec).momentum_correction = Switch::Off;
  plan.optimizer = MomentumOptions{};
  EXPECT_EQ(effective_optimizer_and_codec(plan).optimizer.kind, OptimizerKind::Momentum);
}

// A learning-rate schedule: the step decay's milestones given, increasing and
// within the run; its fields only with it.
TEST(RunPlan, AStepDecayNeedsIncreasingMilestonesWithinTheRun) {
  RunPlan plan;
  plan.run.epochs = 10;
  plan.run.lr_decay = LrDecay::Step;
  EXPECT_EQ(check_plan(plan).joined(),
            "run.lr_milestones: the step decay needs the epochs after which to multiply lr by run.lr_gamma");
  plan.run.lr_milestones = {6, 8};
  plan.run.lr_gamma = 0.25;
  EXPECT_TRUE(check_plan(plan).empty()) << check_plan(plan).joined();
  EXPECT_EQ(effective_optimizer_and_codec(plan).optimizer.schedule, (LrSchedule{LrDecay::Step, {6, 8}, 0.25, 10}));
  plan.run.lr_milestones = {8, 6};
  EXPECT_EQ(check_plan(plan).joined(), "run.lr_milestones must increase (got 6 after 8)");
  plan.run.lr_milestones = {6, 10};
  EXPECT_EQ(check_plan(plan).joined(),
            "run.lr_milestones 10: the run ends after 10 epochs, so lr would never change there");
  plan.run.lr_milestones = {6};
  plan.run.lr_gamma = 0;
  EXPECT_NE(check_plan(plan).joined().find("run.lr_gamma"), std::string::npos);
  plan.run.lr_gamma = 0.5;
  plan.run.lr_decay = LrDecay::Cosine;
  const std::string all = check_plan(plan).joined();
  EXPECT_NE(all.find("run.lr_milestones applies only with run.lr_decay step (got cosine)"), std::string::npos) << all;
  EXPECT_NE(all.find("run.lr_gamma applies only with run.lr_decay step (got cosine)"), std::string::npos) << all;
  plan.run.lr_milestones.clear();
  plan.run.lr_gamma = RunControls{}.lr_gamma;
  EXPECT_TRUE(check_plan(plan).empty()) << check_plan(plan).joined();
  EXPECT_EQ(effective_optimizer_and_codec(plan).optimizer.schedule.epochs, 10);
}

TEST(PlanJson, AWrittenPlanReadsBackTheSame) {
  RunPlan plan;
  plan.model = MlpOptions{{256, 64}};
  SspOptions ssp;
  ssp.servers = 3;
  ssp.staleness = 5;
  ssp.stale_policy = "drop:4";
  plan.strategy = ssp;
  Int8Options int8;
  int8.rounding = Rounding::Stochastic;
  plan.codec = int8;
  plan.optimizer = NesterovOptions{.lr = 0.07f, .momentum = 0.85f, .weight_decay = 1e-4f};
  plan.run.epochs = 0.5;
  plan.run.lr_decay = LrDecay::Step;
  plan.run.lr_milestones = {2, 3};
  plan.run.lr_gamma = 0.3;
  plan.run.seed = 123456789012345ull;
  plan.data_controls.train_samples = 100;
  const nlohmann::json j = plan_to_json(plan);
  Problems problems;
  const RunPlan back = plan_from_json(j, RunPlan{}, "", problems);
  EXPECT_TRUE(problems.empty()) << problems.joined();
  EXPECT_EQ(plan_to_json(back), j);
  EXPECT_EQ(std::get<NesterovOptions>(back.optimizer).lr, 0.07f);  // the same float, bit for bit
  EXPECT_EQ(j["optimizer"]["lr"], 0.07);                           // written as its shortest text
  EXPECT_EQ(j["codec"]["rounding"], "stochastic");
  EXPECT_EQ(j["strategy"]["name"], "ssp");
  EXPECT_EQ(j["run"]["lr_decay"], "step");
  EXPECT_EQ(back.run.lr_milestones, (std::vector<int64_t>{2, 3}));
}

TEST(PlanJson, ProblemsNameTheFieldAndSuggestTheClosestName) {
  const auto j = nlohmann::json::parse(R"({
      "strategy": {"name": "hybird"},
      "codec": {"name": "dgc", "densty": 0.1, "warmup": "soon"},
      "run": {"workers": -2, "batch": 1.5, "seed": 18446744073709551615},
      "optimiser": {}
  })");
  Problems problems;
  plan_from_json(j, RunPlan{}, "plan.json", problems);
  const std::string all = problems.joined();
  for (const char* expected :
       {"plan.json: strategy.name: unknown strategy 'hybird' (did you mean hybrid?",
        "plan.json: codec.densty is not a field of codec (did you mean density?)",
        "plan.json: codec.warmup: expected a number, got \"soon\"", "plan.json: run.batch: expected an integer, got 1.5",
        "plan.json: optimiser is not a section of a plan (did you mean optimizer?)"})
    EXPECT_NE(all.find(expected), std::string::npos) << expected << "\n" << all;
  // A negative worker count is read, then refused by the checks (it is a range problem, not a type one).
  EXPECT_EQ(all.find("run.workers"), std::string::npos) << all;
}

TEST(PlanJson, AFileOrAReportIsReadWithItsPathInTheError) {
  test::ScratchDir dir;
  const std::string path = dir.file("p.json");
  std::ofstream(path) << R"({"schema_version": 1, "plan": {"run": {"workers": 3}, "model": {"name": "cnn"}}})";
  const RunPlan plan = read_plan_file(path);
  EXPECT_EQ(plan.run.workers, 3);
  EXPECT_TRUE(std::holds_alternative<CnnOptions>(plan.model));
  std::ofstream(path) << R"(/* a comment */ {"run": {"workrs": 3}})";
  EXPECT_EQ(test::error_message([&] { read_plan_file(path); }),
            "plan file " + path + ": run.workrs is not a field of run (did you mean workers?)");
  EXPECT_NE(test::error_message([&] { read_plan_file(dir.path().string()); }).find("not a regular file"),
            std::string::npos);
  // A FIFO is refused at once, not waited on.
  ASSERT_EQ(::mkfifo(dir.file("fifo.json").c_str(), 0600), 0);
  EXPECT_EQ(test::error_message([&] { read_plan_file(dir.file("fifo.json")); }),
            "plan file " + dir.file("fifo.json") + ": is a FIFO (named pipe), not a regular file");
}

// Found by fuzz/plan_file_fuzz: a number past a double's range escaped as
// nlohmann's out_of_range, which the CLI printed as an internal error
// without the file; names and values with a newline split the one-line error.
TEST(PlanJson, EveryBadFileIsOneErrorOfOneLineNamingTheFile) {
  test::ScratchDir dir;
  const std::string path = dir.file("p.json");
  std::ofstream(path) << R"({"optimizer": {"name": "sgd", "lr": 1e999}})";
  EXPECT_EQ(test::error_message([&] { read_plan_file(path); }),
            "plan file " + path +
                ": not valid JSON ([json.exception.out_of_range.406] number overflow parsing '1e999')");
  std::ofstream(path) << R"({"stra\ntegy": {}, "model": {"name": "m\nlp"}, "run": {"backend": "lo\ncal"}})";
  EXPECT_EQ(
      test::error_message([&] { read_plan_file(path); }),
      "plan file " + path +
          ": model.name: unknown model 'm\\x0alp' (did you mean mlp? choose mlp, cnn, softmax, lstm or "
          "torchscript); "
          "run.backend: expected one of auto, local, mpi, got 'lo\\x0acal'; stra\\x0ategy is not a section "
          "of a plan (did you mean strategy?)");
}

// Found by fuzz/plan_file_fuzz, whose plans must read back from their JSON: a
// size given as a number skipped the limits of its text (0, and more than
// 10^15 bytes, were taken, then written as text that reads as an error); the
// largest float, written as 3.4028235e+38, read back as out of range.
TEST(PlanJson, EveryCheckedPlanReadsBackFromItsJson) {
  const auto read = [](const std::string& text, Problems& problems) {
    return plan_from_json(nlohmann::json::parse(text), RunPlan{}, "", problems);
  };
  const auto reads_back = [](const RunPlan& plan) {
    Problems problems;
    const RunPlan again =
        plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()), RunPlan{}, "", problems);
    EXPECT_TRUE(problems.empty()) << problems.joined();
    EXPECT_EQ(plan_to_json(again), plan_to_json(plan));
  };
  {
    Problems problems;
    read(R"({"strategy": {"name": "hybrid", "bucket_size": 1000000000000001}})", problems);
    EXPECT_EQ(problems.joined(),
              "strategy.bucket_size: expected a size such as 25MiB, 512KiB or 4096, got '1000000000000001'");
  }
  {
    Problems problems;  // a size, written back as "0B", but not one this field takes: its range says so
    const RunPlan zero = read(R"({"strategy": {"name": "hybrid", "bucket_size": 0}})", problems);
    EXPECT_TRUE(problems.empty()) << problems.joined();
    reads_back(zero);
    EXPECT_EQ(check_plan(zero).joined(), "strategy.bucket_size must be > 0 (got 0B)");
    reads_back(RunPlan{});  // run.memory_limit 0: none
  }
  Problems problems;
  const RunPlan sized = read(R"({"strategy": {"name": "hybrid", "bucket_size": 1048576}})", problems);
  EXPECT_EQ(std::get<HybridOptions>(sized.strategy).bucket_size.bytes, size_t{1} << 20);
  reads_back(sized);
  for (const char* lr : {"3.4028234663852886e38", "3.4028235e38"}) {
    const RunPlan largest =
        read(std::string(R"({"optimizer": {"name": "sgd", "lr": )") + lr + "}}", problems);
    EXPECT_EQ(std::get<SgdOptions>(largest.optimizer).lr, std::numeric_limits<float>::max()) << lr;
    reads_back(largest);
  }
  EXPECT_TRUE(problems.empty()) << problems.joined();
  read(R"({"optimizer": {"name": "sgd", "lr": 3.5e38}})", problems);
  EXPECT_EQ(problems.joined(), "optimizer.lr is out of range (got 3.5e+38)");
}

}  // namespace
}  // namespace ptrain
