// Counts no memory holds are refused naming their field before any model is
// built (found by tools/bad_inputs.sh: --hidden 2000000000 ended in
// std::bad_alloc with a LibTorch stack trace, exit 1).
#include "run/memory_check.hpp"

#include <gtest/gtest.h>

#include "core/memory_size.hpp"

namespace ptrain {
namespace {

const ModelInput kImages{{1, 28, 28}, 10, {}, 0};

std::string problems_of(const RunPlan& plan, int workers, bool plan_model = true) {
  Problems problems;
  check_memory(plan, kImages, workers, plan_model, problems);
  return problems.joined();
}

TEST(MemoryCheck, TheMlpsWidthsAreCountedBeforeAllocating) {
  EXPECT_EQ((MlpOptions{{128}}.parameters(kImages)), 784.0 * 128 + 128 + 128 * 10 + 10);
  EXPECT_EQ((MlpOptions{{100, 50}}.parameters(kImages)), 784.0 * 100 + 100 + 100 * 50 + 50 + 50 * 10 + 10);
  RunPlan plan;
  plan.model = MlpOptions{{2000000000}};
  const std::string all = problems_of(plan, 2);
  EXPECT_EQ(all.rfind("model.hidden: the mlp model of 1.59e+12 parameters for 10 classes (its weights and gradients) "
                      "needs ",
                      0),
            0u)
      << all;
  EXPECT_NE(all.find("of memory this machine has"), std::string::npos) << all;
  // Too many classes for the output layer: the classes are named, not the hidden widths.
  Problems classes;
  check_memory(RunPlan{}, ModelInput{{1, 28, 28}, 2147483647, {}, 0}, 1, true, classes);
  EXPECT_EQ(classes.joined().rfind("data.classes: the mlp model of ", 0), 0u) << classes.joined();
  // A library caller's model is not the plan's.
  EXPECT_EQ(problems_of(plan, 2, false), "");
  EXPECT_EQ(problems_of(RunPlan{}, 2), "");
}

TEST(MemoryCheck, ReplicasOfTheWorkersAndTheirBatchesAreCounted) {
  const double memory = static_cast<double>(memory_size_bytes());
  RunPlan plan;
  // Each replica fits, a thousand of them do not.
  const auto width = static_cast<int64_t>(memory / 1000 / 8 / 784 * 4);
  plan.model = MlpOptions{{width}};  // about memory / 2000 bytes each
  const std::string workers = problems_of(plan, 1000);
  EXPECT_EQ(workers.rfind("run.workers 1000: a replica each of the ", 0), 0u) << workers;
  EXPECT_EQ(problems_of(plan, 1), "");  // under mpirun, one worker a process
  plan = RunPlan{};
  plan.run.batch = static_cast<size_t>(memory / 784 / 4 / 2) + 1;
  EXPECT_EQ(problems_of(plan, 1), "");
  const std::string batches = problems_of(plan, 2);
  EXPECT_EQ(batches.rfind("run.batch " + std::to_string(plan.run.batch) + ": 2 batches of ", 0), 0u) << batches;
}

TEST(MemorySize, TheMachinesMemoryBoundsTheCounts) {
  EXPECT_GT(memory_size_bytes(), uint64_t{1} << 24);
  EXPECT_FALSE(beyond_memory(1024));
  const auto why = beyond_memory(1e30);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("more than the "), std::string::npos) << *why;
  EXPECT_EQ(gib_text(1.5 * 1024 * 1024 * 1024), "1.5 GiB");
}

}  // namespace
}  // namespace ptrain
