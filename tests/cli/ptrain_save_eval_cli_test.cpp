// ptrain train --save and ptrain eval: a model ptrain
// saved, evaluated by ptrain eval and by a Python script that knows nothing of
// ptrain (examples/python_eval/evaluate.py: torch.jit.load and the IDX files
// as stored), gets the accuracy and loss that training reported.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_ptrain.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::Outcome;
using test::run_ptrain;

using test::kMpirun;

using test::python_has_torch;

using test::read_json;

// A model written in PyTorch with its own loss (twice the cross-entropy, so
// that the numbers tell which loss scored it), scripted and saved.
constexpr const char* kUserModel = R"(
import sys
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(784, 24), nn.Tanh(), nn.Linear(24, 10))

    def forward(self, x):
        return self.body(x)

    @torch.jit.export
    def loss(self, output, labels):
        return 2 * nn.functional.cross_entropy(output, labels)

torch.manual_seed(5)
torch.jit.script(Net()).save(sys.argv[1])
)";

struct Score {
  size_t correct = 0;
  double loss = 0;
};

// What training reported of its last evaluation.
Score trained_score(const std::string& report) {
  const auto r = read_json(report);
  const double accuracy = r["epochs"].back()["test_accuracy"].get<double>();
  const auto samples = r["run"]["test_samples"].get<size_t>();
  return {static_cast<size_t>(std::llround(accuracy * static_cast<double>(samples))),
          r["epochs"].back()["test_loss"].get<double>()};
}

TEST(PtrainSaveEval, PythonAndPtrainEvalScoreWhatTrainingReported) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  if (!python_has_torch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian: python3-torch)";
  test::ScratchDir dir;
  std::ofstream(dir.file("make.py")) << kUserModel;
  const std::string user = dir.file("user.pt");
  ASSERT_EQ(std::system(("/usr/bin/python3 " + dir.file("make.py") + " " + user).c_str()), 0);
  const std::vector<std::pair<std::string, std::string>> models = {{"mlp", "--model mlp --hidden 32,16"},
                                                                   {"cnn", "--model cnn"},
                                                                   {"softmax", "--model softmax"},
                                                                   {"torchscript", "--model " + user}};
  std::string saved_files;
  std::map<std::string, Score> trained;
  std::map<std::string, size_t> evaluated;  // by ptrain eval
  for (const auto& [name, options] : models) {
    const std::string saved = dir.file(name + ".pt");
    const std::string report = dir.file(name + "-train.json");
    const Outcome train =
        run_ptrain("train " + options +
                   " --workers 2 --batch 32 --train-samples 1024 --epochs 1 --optimizer sgd "
                   "--lr 0.05 --quiet --save " +
                   saved + " --report " + report);
    ASSERT_EQ(train.exit_code, 0) << name << ": " << train.err;
    EXPECT_EQ(read_json(report)["plan"]["run"]["save_model"], saved);  // a replayed report saves again
    trained[name] = trained_score(report);

    const std::string evaluation = dir.file(name + "-eval.json");
    const Outcome eval = run_ptrain("eval --model " + saved + " --report " + evaluation);
    ASSERT_EQ(eval.exit_code, 0) << name << ": " << eval.err;
    EXPECT_NE(eval.out.find("test accuracy"), std::string::npos) << eval.out;
    const auto e = read_json(evaluation);
    EXPECT_EQ(e["command"], "eval");
    EXPECT_EQ(e["model"]["name"], name);
    EXPECT_EQ(e["test"]["samples"], 10000);
    evaluated[name] = e["test"]["correct"].get<size_t>();
    if (name == "softmax") {  // the native model sums in its loop's order, the file's forward in BLAS's
      EXPECT_NEAR(e["test"]["loss"].get<double>(), trained[name].loss, 1e-6) << name;
    } else {  // the same ATen operators on one thread, as training evaluated: the same bits
      EXPECT_EQ(evaluated[name], trained[name].correct) << name;
      EXPECT_EQ(e["test"]["loss"].get<double>(), trained[name].loss) << name;
    }
    EXPECT_EQ(e["model"]["saved"]["model"]["name"], name);  // the file's ptrain.json: the plan's model
    saved_files += " " + saved;
  }
  // The user's loss scored it: twice the cross-entropy of a barely trained net.
  EXPECT_GT(trained["torchscript"].loss, 2 * std::log(10.0) * 0.5);

  const std::string script = std::string(PTRAIN_SOURCE_DIR) + "/examples/python_eval/evaluate.py";
  const std::string out = dir.file("python.out");
  ASSERT_EQ(std::system(("/usr/bin/python3 " + script + " --json" + saved_files + " >" + out).c_str()), 0);
  std::ifstream lines(out);
  std::string line;
  size_t seen = 0;
  while (std::getline(lines, line)) {
    const auto r = nlohmann::json::parse(line);
    const std::string name = r["model_name"];
    ASSERT_TRUE(trained.contains(name)) << line;
    EXPECT_EQ(r["samples"], 10000) << name;
    EXPECT_EQ(r["correct"].get<size_t>(), evaluated[name]) << name;  // the file's forward both times
    if (name == "softmax") {
      // Its logits differ from the native model's in the last bits (another
      // summation order): only a prediction whose top two logits are that close may differ.
      const auto differ =
          static_cast<int64_t>(r["correct"].get<size_t>()) - static_cast<int64_t>(trained[name].correct);
      EXPECT_LE(std::abs(differ), r["near_ties"].get<int64_t>()) << name;
    } else {
      EXPECT_EQ(r["correct"].get<size_t>(), trained[name].correct) << name;
    }
    EXPECT_NEAR(r["loss"].get<double>(), trained[name].loss, 1e-4 * trained[name].loss) << name;
    ++seen;
  }
  EXPECT_EQ(seen, models.size());
}

TEST(PtrainSaveEval, UnderMpirunRankZeroSaves) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  test::ScratchDir dir;
  const std::string saved = dir.file("m.pt");
  const Outcome train = test::run_ptrain_with_env(
      std::string(kMpirun) + " -np 2",
      "train --model mlp --hidden 16 --train-samples 512 --epochs 1 --quiet --save " + saved + " --report " +
          dir.file("r.json"));
  ASSERT_EQ(train.exit_code, 0) << train.err;
  const Outcome eval = run_ptrain("eval --model " + saved + " --quiet --report " + dir.file("e.json"));
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_EQ(test::lines(eval.out), 1u) << eval.out;  // --quiet: the result line
  EXPECT_EQ(read_json(dir.file("e.json"))["test"]["correct"].get<size_t>(),
            trained_score(dir.file("r.json")).correct);
}

TEST(PtrainSaveEval, BadSavePathsAreRefusedBeforeTraining) {
  test::ScratchDir dir;
  std::filesystem::create_directory(dir.file("sub"));
  std::ofstream(dir.file("target")) << "keep me\n";
  std::filesystem::create_symlink(dir.file("target"), dir.file("link.pt"));
  ASSERT_EQ(::mkfifo(dir.file("fifo.pt").c_str(), 0600), 0);
  // The data is never read: a missing data directory would be named too, after these.
  test::expect_one_line_errors({
      {"train --save " + dir.file("no/such/m.pt"),
       "--save: " + dir.file("no/such/m.pt") + ": directory " + dir.file("no/such") + " does not exist"},
      {"train --save " + dir.file("sub"), "--save: " + dir.file("sub") + ": is a directory"},
      {"train --save " + dir.file("link.pt"), "is a symbolic link; not replaced"},
      {"train --save " + dir.file("fifo.pt"), "is not a regular file (a FIFO, socket or device)"},
      {"sweep --strategies seq --csv " + dir.file("s.csv") + " --save " + dir.file("m.pt"), "--save"},
  });
  EXPECT_EQ(test::read_bytes(dir.file("target")).size(), 8u);
  // Nothing was written beside them (no temporary file left either).
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 4u);
}

TEST(PtrainSaveEval, BadModelsAndDataAreOneLineErrors) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  const std::string saved = dir.file("m.pt");
  ASSERT_EQ(
      run_ptrain("train --model softmax --train-samples 256 --epochs 1 --quiet --save " + saved).exit_code,
      0);
  const auto bytes = test::read_bytes(saved);
  test::write_bytes(dir.file("truncated.pt"),
                    std::vector<uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  std::ofstream(dir.file("notes.txt")) << "not a model\n";
  std::vector<std::pair<std::string, std::string>> cases = {
      {"eval --model " + dir.file("missing.pt"), dir.file("missing.pt") + ": no such file"},
      {"eval --model " + dir.file("notes.txt"),
       dir.file("notes.txt") + ": not a TorchScript file, or a damaged one"},
      {"eval --model " + dir.file("truncated.pt"), "truncated.pt: not a TorchScript file, or a damaged one"},
      {"eval --model " + dir.path().string(), "not a regular file"},
      {"eval", "--model is required"},
      {"eval --model " + saved + " --data " + dir.file("nowhere"), "--data: " + dir.file("nowhere")},
      {"eval --model " + saved + " --data-set npy", "--test-features needs the path of a .npy file"},
      {"eval --model " + saved + " --train-features x.npy", "--train-features"},
      {"eval --model " + saved + " --write-samples " + dir.file("nowhere"),
       "--write-samples " + dir.file("nowhere/features.npy") + ": directory " + dir.file("nowhere") +
           " does not exist"},
      {"eval --model " + saved + " --write-samples " + dir.file("notes.txt"), "--write-samples"},
  };
  if (python_has_torch()) {
    // A TorchScript module, but not one ptrain saved; and test data of another shape.
    std::ofstream(dir.file("make.py"))
        << "import sys, numpy as np, torch\n"
           "torch.jit.script(torch.nn.Linear(10, 3)).save(sys.argv[1] + '/foreign.pt')\n"
           "np.save(sys.argv[1] + '/x.npy', np.zeros((5, 10), np.float32))\n"
           "np.save(sys.argv[1] + '/y.npy', np.arange(5) % 3)\n";
    ASSERT_EQ(std::system(("/usr/bin/python3 " + dir.file("make.py") + " " + dir.path().string()).c_str()),
              0);
    cases.push_back({"eval --model " + dir.file("foreign.pt"),
                     "foreign.pt: a TorchScript module, but not one ptrain saved"});
    cases.push_back({"eval --model " + saved + " --data-set npy --test-features " + dir.file("x.npy") +
                         " --test-labels " + dir.file("y.npy"),
                     "the test set's samples have shape [10]; the model in " + saved + " takes [1, 28, 28]"});
  }
  test::expect_one_line_errors(cases);
  const Outcome under_mpi = test::run_ptrain_with_env("OMPI_COMM_WORLD_SIZE=2", "eval --model " + saved);
  EXPECT_NE(under_mpi.exit_code, 0);
  EXPECT_NE(under_mpi.err.find("ptrain eval runs in one process"), std::string::npos) << under_mpi.err;
}

}  // namespace
}  // namespace ptrain
