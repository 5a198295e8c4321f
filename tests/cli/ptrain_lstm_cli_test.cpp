// The LSTM language model on the King James Bible through the ptrain
// command: the same bits on threads and under mpirun, every strategy and
// codec trains it, and each bad input is one line. Characters and a small
// model keep each run to a second or two.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "data/bible_corpus.hpp"
#include "run_ptrain.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::Outcome;
using test::run_ptrain;
using test::run_ptrain_with_env;

using test::kMpirun;
const std::string kSmall =
    " --data-set bible --characters --embedding-size 16 --hidden-size 16 --layers 1 --bptt 20 --batch 4 --dropout 0.2 "
    "--train-samples 2000 --test-samples 500 -q ";

using test::read_json;

TEST(PtrainLstmCli, MpirunTrainsTheSameBitsAsThreads) {
  if (!std::filesystem::exists(kDefaultBibleProgram)) GTEST_SKIP() << "bible-kjv not installed";
  if (std::system("command -v mpirun >/dev/null") != 0) GTEST_SKIP() << "no mpirun";
  test::ScratchDir dir;
  for (const std::string codec : {"dgc --dgc-density 0.01 --dgc-clip 1"}) {
    const std::string args = "train" + kSmall + "--max-steps 30 --optimizer momentum --lr 0.5 --compress " + codec;
    const Outcome threads = run_ptrain(args + " --workers 2 --report " + dir.file("threads.json"));
    ASSERT_EQ(threads.exit_code, 0) << threads.err;
    const Outcome ranks =
        run_ptrain_with_env(std::string(kMpirun) + " -np 2", args + " --report " + dir.file("ranks.json"));
    ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
    const auto t = read_json(dir.file("threads.json")), r = read_json(dir.file("ranks.json"));
    EXPECT_EQ(r["run"]["backend"], "mpi");
    EXPECT_EQ(t["run"]["task"], "language-model");
    EXPECT_EQ(t["summary"]["final_params_fnv1a64"], r["summary"]["final_params_fnv1a64"]) << codec;
    EXPECT_EQ(t["summary"]["final_test_perplexity"], r["summary"]["final_test_perplexity"]) << codec;
  }
}

TEST(PtrainLstmCli, EveryStrategyAndCodecTrainsIt) {
  if (!std::filesystem::exists(kDefaultBibleProgram)) GTEST_SKIP() << "bible-kjv not installed";
  test::ScratchDir dir;
  const std::vector<std::string> cases = {
      "--strategy hybrid --compress fp16",  "--strategy hybrid --compress int8",
      "--strategy hybrid --compress topk",  "--strategy hybrid --compress dgc --dgc-density 0.01",
      "--strategy sequential",              "--strategy ps-sync --servers 1",
      "--strategy ps-backup --backup 1",    "--strategy ssp --staleness 2",
      "--strategy async",                   "--strategy mutex",
      "--strategy hogwild",                 "--strategy leashed"};
  for (const std::string& strategy : cases) {
    const std::string path = dir.file("r.json");
    std::filesystem::remove(path);
    const Outcome o = run_ptrain("train" + kSmall + "--workers 2 --epochs 0.25 --optimizer adam --lr 0.01 " + strategy +
                                 " --report " + path);
    ASSERT_EQ(o.exit_code, 0) << strategy << ": " << o.err;
    const auto r = read_json(path);
    EXPECT_EQ(r["run"]["task"], "language-model") << strategy;
    const double perplexity = r["summary"]["final_test_perplexity"];
    // Guessing among the characters gives about the vocabulary's size; a quarter of an epoch learns some.
    EXPECT_TRUE(std::isfinite(perplexity)) << strategy;
    EXPECT_LT(perplexity, 0.5 * r["run"]["classes"].get<double>()) << strategy << ": " << perplexity;
  }
}

// --save writes the LSTM as TorchScript: ptrain eval scores the test stream
// as the run did (whole rows, the state carried), and on npy sequences
// Python's torch.jit.load scores what ptrain does.
TEST(PtrainLstmCli, ASavedModelScoresWhatTheRunMeasuredInPtrainEvalAndPython) {
  if (!std::filesystem::exists(kDefaultBibleProgram)) GTEST_SKIP() << "bible-kjv not installed";
  test::ScratchDir dir;
  const std::string data = " --data-set bible --characters";
  const Outcome trained = run_ptrain("train" + data + " --embedding-size 16 --hidden-size 16 --bptt 20 --batch 4 " +
                                     "--train-samples 2000 --workers 2 -q --max-steps 30 --save " + dir.file("m.pt") +
                                     " --report " + dir.file("run.json"));
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const Outcome scored = run_ptrain("eval --model " + dir.file("m.pt") + data + " --report " + dir.file("eval.json") +
                                    " --write-samples " + dir.path().string());
  ASSERT_EQ(scored.exit_code, 0) << scored.err;
  const auto run = read_json(dir.file("run.json")), eval = read_json(dir.file("eval.json"));
  const double measured = run["summary"]["final_test_perplexity"], again = eval["test"]["perplexity"];
  EXPECT_NEAR(again, measured, 1e-6 * measured);
  EXPECT_EQ(eval["test"]["samples"], 10);  // the stream in the 10 rows training scored it in
  EXPECT_NE(scored.out.find("the run that saved it measured perplexity"), std::string::npos) << scored.out;

  if (!test::python_has_torch()) return;
  // examples/python_eval/evaluate.py's JSON line for a model scored on .npy samples: PyTorch alone.
  const auto scored_in_python = [&](const std::string& model, const std::string& features, const std::string& labels) {
    const std::string script = std::string(PTRAIN_SOURCE_DIR) + "/examples/python_eval/evaluate.py";
    const std::string out = dir.file("python.out");
    const int status = std::system(
        ("/usr/bin/python3 " + script + " --json " + model + " --features " + features + " --labels " + labels + " >" + out)
            .c_str());
    EXPECT_EQ(status, 0) << model;
    return status == 0 ? read_json(out) : nlohmann::json::object();
  };
  // The bible's rows as eval read them, scored by PyTorch alone: the run's perplexity.
  const auto from_python = scored_in_python(dir.file("m.pt"), dir.file("features.npy"), dir.file("labels.npy"));
  ASSERT_FALSE(from_python.empty());
  EXPECT_EQ(from_python["samples"], 10);
  EXPECT_NEAR(std::exp(from_python["loss"].get<double>()), measured, 1e-5 * measured);
  EXPECT_EQ(from_python["targets"], eval["test"]["targets"]);

  std::ofstream(dir.file("make.py")) << "import numpy as np\n"
                                        "rng = np.random.default_rng(3)\n"
                                        "for name, n in (('train', 400), ('test', 60)):\n"
                                        "    x = rng.integers(0, 9, size=(n, 13))\n"
                                        "    x[:, 1::2] = (x[:, 0::2][:, :6] + 1) % 9\n"
                                        "    np.save(name + '_x.npy', x[:, :12].astype(np.int64))\n"
                                        "    np.save(name + '_y.npy', x[:, 1:].astype(np.int64))\n";
  ASSERT_EQ(std::system(("cd " + dir.path().string() + " && /usr/bin/python3 make.py").c_str()), 0);
  const std::string npy = " --data-set npy --train-features " + dir.file("train_x.npy") + " --train-labels " +
                          dir.file("train_y.npy") + " --test-features " + dir.file("test_x.npy") +
                          " --test-labels " + dir.file("test_y.npy");
  const Outcome own = run_ptrain("train --model lstm --embedding-size 8 --hidden-size 12 --bptt 12 --epochs 2 -q" +
                                 npy + " --save " + dir.file("own.pt") + " --report " + dir.file("own.json"));
  ASSERT_EQ(own.exit_code, 0) << own.err;
  const auto python = scored_in_python(dir.file("own.pt"), dir.file("test_x.npy"), dir.file("test_y.npy"));
  ASSERT_FALSE(python.empty());
  const auto own_run = read_json(dir.file("own.json"));
  const double loss = own_run["epochs"].back()["test_loss"];
  EXPECT_EQ(python["task"], "language-model");
  EXPECT_NEAR(python["loss"].get<double>(), loss, 1e-5 * loss);
  EXPECT_NEAR(std::exp(python["loss"].get<double>()), own_run["summary"]["final_test_perplexity"].get<double>(), 1e-3);
}

TEST(PtrainLstmCli, BadInputsAreOneLineEach) {
  if (!std::filesystem::exists(kDefaultBibleProgram)) GTEST_SKIP() << "bible-kjv not installed";
  test::ScratchDir dir;
  // Token ids in npy features past the vocabulary given.
  const auto npy = [&](const std::string& name, const std::string& body) {
    const std::string path = dir.file(name);
    const std::string script = "import numpy as np\n" + body + "\n";
    std::ofstream(dir.file("make.py")) << script;
    EXPECT_EQ(std::system(("cd " + dir.path().string() + " && /usr/bin/python3 make.py").c_str()), 0);
    return path;
  };
  npy("x.npy", "np.save('x.npy', np.array([[1, 2, 9], [3, 4, 5]], dtype=np.int64))");
  npy("y.npy", "np.save('y.npy', np.array([[2, 3, 4], [4, 5, 6]], dtype=np.int64))");
  const std::string tokens = " --data-set npy --train-features " + dir.file("x.npy") + " --train-labels " +
                             dir.file("y.npy") + " --test-features " + dir.file("x.npy") + " --test-labels " +
                             dir.file("y.npy");
  test::expect_one_line_errors({
      {"train --data-set bible --bptt 0", "--bptt"},
      {"train --data-set bible --characters --bptt 1000000 --workers 2 --batch 4",
       "--bptt 1000000: the training stream's"},
      {"train --data-set bible --program " + dir.file("none"), "no such program; install Debian's bible-kjv"},
      {"train --data-set bible --held-out train", "--held-out: expected one of validation, test, got 'train'"},
      {"train --data-set bible --tie --embedding-size 16 --hidden-size 32", "needs embedding_size = hidden_size (here 16 and 32)"},
      {"train --model lstm --train-samples 100", "model lstm: a language model needs token sequences"},
      {"train --model lstm --classes 8" + tokens, "token id 9 at index 2 is outside the vocabulary [0, 8)"},
      {"train --data-set bible --vocabulary 2", "--vocabulary"},
      {"train --data-set bible --characters --microbatches 2 --batch 4",
       "--microbatches: bible-characters-train is a token stream, whose rows carry the model's state"},
  });
}

}  // namespace
}  // namespace ptrain
