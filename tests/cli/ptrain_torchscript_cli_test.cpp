// ptrain train --model torchscript --path FILE: a model from Python, trained
// from the command line on Fashion-MNIST.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_ptrain.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::Outcome;
using test::run_ptrain;

// ptrain's built-in MLP (784-128-10), written in PyTorch and scripted.
constexpr const char* kScript = R"(
import sys
import torch
from torch import nn

torch.manual_seed(3)
mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
torch.jit.script(mlp).save(sys.argv[1])
)";

using test::python_has_torch;

TEST(PtrainTorchScriptCli, TrainsAModelScriptedInPython) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  if (!python_has_torch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian: python3-torch)";
  test::ScratchDir dir;
  std::ofstream(dir.file("make.py")) << kScript;
  const std::string model = dir.file("mlp.pt");
  ASSERT_EQ(std::system(("/usr/bin/python3 " + dir.file("make.py") + " " + model).c_str()), 0);
  const std::string report = dir.file("run.json");
  // --model FILE is short for --model torchscript --path FILE.
  const Outcome o = run_ptrain("train --model " + model +
                               " --workers 2 --train-samples 4096 --epochs 1 --quiet --report " + report);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::ifstream in(report);
  const auto json = nlohmann::json::parse(in);
  EXPECT_EQ(json["plan"]["model"]["name"], "torchscript");
  EXPECT_EQ(json["plan"]["model"]["path"], model);
  EXPECT_EQ(json["run"]["model"], "torchscript");
  EXPECT_GT(json["epochs"][0]["test_accuracy"].get<double>(), 0.7);
}

TEST(PtrainTorchScriptCli, ABadPathIsAOneLineError) {
  // The data set is read before the model is built.
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  test::ScratchDir dir;
  std::ofstream(dir.file("notes.txt")) << "not a model\n";
  test::expect_one_line_errors({
      {"train --model torchscript --path " + dir.file("missing.pt") + " --train-samples 64 --epochs 1",
       dir.file("missing.pt") + ": no such file"},
      {"train --model torchscript --path " + dir.file("notes.txt") + " --train-samples 64 --epochs 1",
       "not a TorchScript module"},
      {"train --model torchscript --path " + dir.path().string() + " --train-samples 64 --epochs 1",
       "not a regular file"},
      {"train --model torchscript --train-samples 64 --epochs 1", "no path given"},
      {"train --model " + dir.file("other.pt") + " --train-samples 64 --epochs 1",
       dir.file("other.pt") + ": no such file"},
  });
}

}  // namespace
}  // namespace ptrain

namespace ptrain {
namespace {

// A model that does not fit the data is bad input, refused before training
// with exit 2, naming the file, the shapes and the classes (it failed at the
// first step with 75, "resume from a checkpoint", and LibTorch's words only).
TEST(PtrainTorchScriptCli, AModelThatDoesNotFitTheDataIsRefusedBeforeTraining) {
  if (!std::filesystem::exists(test::kFashionMnistDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  if (!test::python_has_torch())
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian: python3-torch)";
  test::ScratchDir dir;
  std::ofstream(dir.file("make.py")) << R"(
import sys
import torch
from torch import nn
torch.jit.script(nn.Sequential(nn.Flatten(), nn.Linear(784, 7))).save(sys.argv[1])
torch.jit.script(nn.Sequential(nn.Flatten(), nn.Linear(100, 10))).save(sys.argv[2])
)";
  const std::string seven = dir.file("seven.pt"), narrow = dir.file("narrow.pt");
  ASSERT_EQ(std::system(("/usr/bin/python3 " + dir.file("make.py") + " " + seven + " " + narrow).c_str()), 0);
  const Outcome outputs = run_ptrain("train --model " + seven + " --workers 2 --train-samples 256 --epochs 1 --quiet");
  EXPECT_EQ(outputs.exit_code, 2) << outputs.err;
  EXPECT_EQ(test::lines(outputs.err), 1u) << outputs.err;
  EXPECT_NE(outputs.err.find("model " + seven + " does not fit the data (samples of shape [1, 28, 28] and 10 "
                                                "classes): its output for 2 samples has shape [2, 7], not [2, 10]"),
            std::string::npos)
      << outputs.err;
  const Outcome inputs = run_ptrain("train --model " + narrow + " --workers 2 --train-samples 256 --epochs 1 --quiet");
  EXPECT_EQ(inputs.exit_code, 2) << inputs.err;
  EXPECT_EQ(test::lines(inputs.err), 1u) << inputs.err;
  EXPECT_NE(inputs.err.find("model " + narrow + " does not fit the data (samples of shape [1, 28, 28]"),
            std::string::npos)
      << inputs.err;
}

}  // namespace
}  // namespace ptrain
