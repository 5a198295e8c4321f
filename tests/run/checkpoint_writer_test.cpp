#include "run/checkpoint_writer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <filesystem>
#include <thread>

#include "test_support.hpp"

namespace ptrain {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kWriterRun = 0x5eed;
constexpr auto kTimeout = std::chrono::milliseconds(5000);

std::vector<std::byte> writer_state_of(uint64_t step, int rank) {
  return std::vector<std::byte>(64 + static_cast<size_t>(rank), std::byte(static_cast<uint8_t>(step + 7 * rank)));
}

std::vector<std::string> manifests_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".ckpt") names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Two lockstep workers' writers on one store, as the trainer drives them.
struct TwoWorkers {
  explicit TwoWorkers(const std::string& dir) : store(dir, 1) {}
  // Every part written, then the manifest: "" or the first failure.
  std::string checkpoint(uint64_t step) {
    for (int r = 0; r < 2; ++r)
      if (auto failed = writers[r]->write_part_now(step, writer_state_of(step, r)); !failed.empty()) return failed;
    return writers[0]->publish_now(step);
  }
  CheckpointStore store;
  std::unique_ptr<CheckpointWriter> writers[2] = {
      std::make_unique<CheckpointWriter>(store, 0, 2, kWriterRun, "{}", kTimeout),
      std::make_unique<CheckpointWriter>(store, 1, 2, kWriterRun, "{}", kTimeout)};
};

// Resumable the moment publish_now returns, with no wait for the flushes;
// once they are done, older checkpoints go.
TEST(CheckpointWriter, ALockstepCheckpointIsCommittedBeforeItIsFlushed) {
  test::ScratchDir dir;
  TwoWorkers w(dir.path().string());
  for (uint64_t step : {10, 20}) {
    ASSERT_EQ(w.checkpoint(step), "");
    const auto found = w.store.newest();  // at once: publish_now wrote the manifest itself
    ASSERT_TRUE(found);
    EXPECT_EQ(found->step, step);
    EXPECT_EQ(w.store.read_part(*found, 1), writer_state_of(step, 1));
  }
  w.writers[0]->finish();
  EXPECT_EQ(w.writers[0]->failure(), "");
  EXPECT_EQ(w.writers[0]->committed(), 2u);
  EXPECT_EQ(manifests_in(dir.path()), std::vector<std::string>{"step-000000000020.ckpt"});  // keep 1, once durable
  EXPECT_FALSE(fs::exists(w.store.part_path(10, kWriterRun, 1)));
}

// A flush that fails is the writer's failure (the trainer stops every worker
// at its next step); the checkpoint that is not on disk is withdrawn and the
// durable one before it stays.
TEST(CheckpointWriter, AFailedFlushIsAFailureAndTheDurableCheckpointBeforeStays) {
  test::ScratchDir dir;
  TwoWorkers w(dir.path().string());
  ASSERT_EQ(w.checkpoint(10), "");
  w.writers[0]->finish();
  for (int r = 0; r < 2; ++r) ASSERT_EQ(w.writers[r]->write_part_now(20, writer_state_of(20, r)), "");
  // Worker 1's part readable, but through a link, which flush_file does not follow.
  const std::string part = w.store.part_path(20, kWriterRun, 1);
  fs::rename(part, dir.file("elsewhere"));
  fs::create_symlink(dir.file("elsewhere"), part);
  ASSERT_EQ(w.writers[0]->publish_now(20), "");
  w.writers[0]->finish();
  const std::string failure = w.writers[0]->failure();
  EXPECT_EQ(failure.rfind("checkpoint of step 20 on worker 0: checkpoint " + part + ": cannot open to flush to disk", 0),
            0u)
      << failure;
  EXPECT_EQ(manifests_in(dir.path()), std::vector<std::string>{"step-000000000010.ckpt"});
  EXPECT_EQ(w.store.newest()->step, 10u);
  EXPECT_EQ(w.writers[0]->write_part_now(30, writer_state_of(30, 0)), failure);  // nothing more is written
  EXPECT_FALSE(fs::exists(w.store.part_path(30, kWriterRun, 0)));
}

// As the trainer drives them: three workers' threads write their parts,
// meet, worker 0 publishes, they meet again and go on, while worker 0's
// writer thread flushes and prunes behind them (a race here is TSan's to find).
TEST(CheckpointWriter, WorkersCommitWhileTheFlushesAndPrunesGoOnBehindThem) {
  test::ScratchDir dir;
  const CheckpointStore store(dir.path().string(), 2);
  constexpr int kWorkers = 3;
  constexpr uint64_t kCheckpoints = 30;
  std::vector<std::unique_ptr<CheckpointWriter>> writers;
  for (int r = 0; r < kWorkers; ++r)
    writers.push_back(std::make_unique<CheckpointWriter>(store, r, kWorkers, kWriterRun, "{}", kTimeout));
  std::barrier meet(kWorkers);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int r = 0; r < kWorkers; ++r)
    threads.emplace_back([&, r] {
      for (uint64_t step = 1; step <= kCheckpoints; ++step) {
        if (!writers[static_cast<size_t>(r)]->write_part_now(step, writer_state_of(step, r)).empty()) ++failures;
        meet.arrive_and_wait();
        if (r == 0 && !writers[0]->publish_now(step).empty()) ++failures;
        meet.arrive_and_wait();
      }
    });
  for (auto& t : threads) t.join();
  writers[0]->finish();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(writers[0]->failure(), "");
  EXPECT_EQ(writers[0]->committed(), kCheckpoints);
  const auto found = store.newest();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->step, kCheckpoints);
  for (int r = 0; r < kWorkers; ++r) EXPECT_EQ(store.read_part(*found, r), writer_state_of(kCheckpoints, r));
  // The last flush was of the last checkpoint: the newest 2 up to it are left, and their parts only.
  EXPECT_EQ(manifests_in(dir.path()), (std::vector<std::string>{"step-000000000029.ckpt", "step-000000000030.ckpt"}));
  EXPECT_EQ(static_cast<size_t>(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator())),
            2u * (kWorkers + 1));
}

TEST(CheckpointWriter, APartThatCannotBeWrittenIsReturnedAsOneLine) {
  test::ScratchDir dir;
  TwoWorkers w(dir.path().string());
  const std::string part = w.store.part_path(5, kWriterRun, 1);
  fs::create_directory(part);
  EXPECT_EQ(w.checkpoint(5), "checkpoint of step 5 on worker 1: checkpoint " + part + ": is a directory");
  EXPECT_FALSE(w.store.newest());
}

}  // namespace
}  // namespace ptrain
