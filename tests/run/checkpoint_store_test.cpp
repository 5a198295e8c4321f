#include "run/checkpoint_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "test_support.hpp"

namespace ptrain {
namespace {

namespace fs = std::filesystem;

std::vector<std::byte> state_of(uint64_t step, int rank) {
  std::vector<std::byte> bytes(100 + static_cast<size_t>(rank));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::byte(static_cast<uint8_t>(step * 31 + i));
  return bytes;
}

constexpr uint64_t kRun = 0xabc;

void write_checkpoint(const CheckpointStore& store, uint64_t step, int workers) {
  std::vector<CheckpointPart> written;
  for (int r = 0; r < workers; ++r) written.push_back(store.write_part(step, kRun, r, state_of(step, r)));
  const auto parts = store.wait_for_parts(step, kRun, workers, std::chrono::seconds(5));
  for (int r = 0; r < workers; ++r) {
    EXPECT_EQ(parts[static_cast<size_t>(r)].bytes, written[static_cast<size_t>(r)].bytes);
    EXPECT_EQ(parts[static_cast<size_t>(r)].crc, written[static_cast<size_t>(r)].crc);
  }
  store.commit(step, kRun, "{\"step\": " + std::to_string(step) + "}", parts);
}

void flip_byte(const std::string& path, size_t at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(c ^ 0x10));
}

// Checked before a run, creating nothing: a directory that is there or can be
// made is taken; a file, a FIFO, a device, or a place where nothing can be
// made is refused naming it.
TEST(CheckpointStore, WhereCheckpointsCannotBeWrittenIsKnownBeforeTheRun) {
  test::ScratchDir dir;
  CheckpointStore::check_writable(dir.path().string());
  CheckpointStore::check_writable(dir.file("new/deeper"));
  EXPECT_FALSE(fs::exists(dir.file("new")));
  EXPECT_TRUE(fs::is_empty(dir.path()));
  test::write_bytes(dir.file("file"), {'x'});
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  auto error = [](const std::string& where) {
    return test::error_message([&] { CheckpointStore::check_writable(where); });
  };
  EXPECT_EQ(error(dir.file("file")),
            "checkpoint directory " + dir.file("file") + ": " + dir.file("file") + " is a regular file, not a directory");
  EXPECT_EQ(error(dir.file("file/sub")),
            "checkpoint directory " + dir.file("file/sub") + ": " + dir.file("file") +
                " is a regular file, not a directory");
  EXPECT_EQ(error(dir.file("fifo")), "checkpoint directory " + dir.file("fifo") + ": " + dir.file("fifo") +
                                         " is a FIFO (named pipe), not a directory");
  EXPECT_EQ(error("/proc/ck").rfind("checkpoint directory /proc/ck: cannot create a file in /proc", 0), 0u)
      << error("/proc/ck");
  EXPECT_EQ(error(""), "checkpoint directory: empty path");
}

TEST(CheckpointStore, FindsTheNewestAndReadsEachWorkersPart) {
  test::ScratchDir dir;
  const CheckpointStore store(dir.file("ckpt"), 3);  // created
  for (uint64_t step : {10, 20, 30}) write_checkpoint(store, step, 3);
  const auto found = store.newest();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->step, 30u);
  EXPECT_EQ(found->plan_json, "{\"step\": 30}");
  ASSERT_EQ(found->parts.size(), 3u);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(store.read_part(*found, r), state_of(30, r));
}

TEST(CheckpointStore, KeepsTheNewestKAndNoOrphanParts) {
  test::ScratchDir dir;
  const CheckpointStore store(dir.path().string(), 2);
  for (uint64_t step : {1, 2, 3, 4}) write_checkpoint(store, step, 2);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "step-000000000003.0000000000000abc.rank-0.part", "step-000000000003.0000000000000abc.rank-1.part",
                       "step-000000000003.ckpt", "step-000000000004.0000000000000abc.rank-0.part",
                       "step-000000000004.0000000000000abc.rank-1.part", "step-000000000004.ckpt"}));
}

TEST(CheckpointStore, ADamagedCheckpointIsSkippedForTheNewestIntactOne) {
  struct Damage {
    const char* what;
    std::function<void(const CheckpointStore&)> apply;
    const char* reason;
  };
  const std::vector<Damage> damages = {
      {"flipped part byte", [](const CheckpointStore& s) { flip_byte(s.part_path(3, kRun, 1), 40); }, "damaged (checksum mismatch)"},
      {"flipped manifest byte", [](const CheckpointStore& s) { flip_byte(s.manifest_path(3), 20); }, "damaged"},
      {"truncated part", [](const CheckpointStore& s) { fs::resize_file(s.part_path(3, kRun, 0), 50); }, "bytes, its manifest"},
      {"truncated manifest", [](const CheckpointStore& s) { fs::resize_file(s.manifest_path(3), 30); }, "damaged"},
      {"empty manifest", [](const CheckpointStore& s) { fs::resize_file(s.manifest_path(3), 0); }, "truncated"},
      {"missing part", [](const CheckpointStore& s) { fs::remove(s.part_path(3, kRun, 1)); }, "cannot open"},
  };
  for (const auto& damage : damages) {
    test::ScratchDir dir;
    const CheckpointStore store(dir.path().string(), 3);
    for (uint64_t step : {1, 2, 3}) write_checkpoint(store, step, 2);
    damage.apply(store);
    std::vector<std::string> skipped;
    const auto found = store.newest([&](const std::string& why) { skipped.push_back(why); });
    ASSERT_TRUE(found) << damage.what;
    EXPECT_EQ(found->step, 2u) << damage.what;
    ASSERT_EQ(skipped.size(), 1u) << damage.what;
    EXPECT_NE(skipped[0].find("step-000000000003"), std::string::npos) << skipped[0];
    EXPECT_NE(skipped[0].find(damage.reason), std::string::npos) << damage.what << ": " << skipped[0];
    EXPECT_EQ(skipped[0].find('\n'), std::string::npos);
  }
}

TEST(CheckpointStore, NothingIntactIsNothingFound) {
  test::ScratchDir dir;
  const CheckpointStore store(dir.path().string(), 3);
  EXPECT_FALSE(store.newest());
  write_checkpoint(store, 5, 1);
  fs::resize_file(store.part_path(5, kRun, 0), 3);
  int skipped = 0;
  EXPECT_FALSE(store.newest([&](const std::string&) { ++skipped; }));
  EXPECT_EQ(skipped, 1);
}

TEST(CheckpointStore, AnUncommittedPartIsNotACheckpoint) {
  test::ScratchDir dir;
  const CheckpointStore store(dir.path().string(), 3);
  write_checkpoint(store, 1, 2);
  store.write_part(2, kRun, 0, state_of(2, 0));  // the run died before worker 1 wrote and worker 0 committed
  EXPECT_EQ(store.newest()->step, 1u);
  EXPECT_EQ(test::error_message([&] { store.wait_for_parts(2, kRun, 2, std::chrono::milliseconds(20)); }),
            "checkpoint at step 2: worker 1's part did not appear in " + dir.path().string() + " within 0.02 s");
}

TEST(CheckpointStore, AnotherRunsPartAtTheSameStepIsNotTaken) {
  test::ScratchDir dir;
  const CheckpointStore store(dir.path().string(), 3);
  write_checkpoint(store, 1, 1);
  store.write_part(2, 0x111, 0, state_of(2, 0));  // a crashed run's, never committed
  store.write_part(2, kRun, 0, state_of(3, 0));
  store.commit(2, kRun, "{}", store.wait_for_parts(2, kRun, 1, std::chrono::seconds(1)));
  const auto found = store.newest();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->run, kRun);
  EXPECT_EQ(store.read_part(*found, 0), state_of(3, 0));
}

TEST(CheckpointStore, RemovesWhatAFailedRunLeftAndNothingElse) {
  test::ScratchDir dir;
  const CheckpointStore store(dir.path().string(), 3);
  write_checkpoint(store, 1, 2);
  store.write_part(2, kRun, 1, state_of(2, 1));  // a checkpoint never committed
  std::ofstream(dir.file(".step-000000000003.0000000000000abc.rank-0.part.Ab12Cd")) << "half";
  std::ofstream(dir.file(".step-000000000003.ckpt.x9Y8z7")) << "half";
  std::ofstream(dir.file("notes.txt")) << "the user's";
  std::ofstream(dir.file(".step-000000000003.ckpt.too-long")) << "not a name ptrain makes";
  EXPECT_EQ(store.remove_leftovers(), 3u);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{".step-000000000003.ckpt.too-long", "notes.txt",
                                             "step-000000000001.0000000000000abc.rank-0.part",
                                             "step-000000000001.0000000000000abc.rank-1.part",
                                             "step-000000000001.ckpt"}));
  EXPECT_EQ(store.newest()->step, 1u);
}

// The lockstep order: parts and manifest renamed into place unflushed
// (resumable at once), then made durable; only a durable checkpoint lets
// older ones go, and never one newer than itself.
TEST(CheckpointStore, APublishedCheckpointIsFoundAtOnceAndPrunesNothingUntilDurable) {
  test::ScratchDir dir;
  const CheckpointStore store(dir.path().string(), 1);
  write_checkpoint(store, 10, 2);  // durable
  auto publish = [&](uint64_t step) {
    for (int r = 0; r < 2; ++r) store.write_part(step, kRun, r, state_of(step, r), Flush::none);
    store.publish(step, kRun, "{}", store.wait_for_parts(step, kRun, 2, std::chrono::milliseconds(0)));
  };
  publish(20);
  publish(30);
  auto manifests = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.path()))
      if (e.path().extension() == ".ckpt") names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  // Keeping 1, yet nothing went: 10 is the only one on disk.
  EXPECT_EQ(manifests(), (std::vector<std::string>{"step-000000000010.ckpt", "step-000000000020.ckpt",
                                                   "step-000000000030.ckpt"}));
  const auto found = store.newest();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->step, 30u);
  EXPECT_EQ(store.read_part(*found, 1), state_of(30, 1));

  store.make_durable(20, kRun, 2);  // 10 goes; 30, not yet durable, stays
  EXPECT_EQ(manifests(), (std::vector<std::string>{"step-000000000020.ckpt", "step-000000000030.ckpt"}));
  EXPECT_FALSE(fs::exists(store.part_path(10, kRun, 0)));
  EXPECT_TRUE(fs::exists(store.part_path(30, kRun, 1)));
  store.make_durable(30, kRun, 2);
  EXPECT_EQ(manifests(), (std::vector<std::string>{"step-000000000030.ckpt"}));
  EXPECT_EQ(store.newest()->step, 30u);
}

TEST(CheckpointStore, ACheckpointThatCannotBeMadeDurableFailsAndPrunesNothing) {
  test::ScratchDir dir;
  const CheckpointStore store(dir.path().string(), 1);
  write_checkpoint(store, 10, 1);
  store.write_part(20, kRun, 0, state_of(20, 0), Flush::none);
  store.publish(20, kRun, "{}", store.wait_for_parts(20, kRun, 1, std::chrono::milliseconds(0)));
  fs::remove(store.part_path(20, kRun, 0));  // gone before its flush
  const std::string message = test::error_message([&] { store.make_durable(20, kRun, 1); });
  EXPECT_EQ(message.rfind("checkpoint " + store.part_path(20, kRun, 0) + ": cannot open to flush to disk", 0), 0u)
      << message;
  EXPECT_TRUE(fs::exists(store.manifest_path(10)));
  store.withdraw(20);
  EXPECT_FALSE(fs::exists(store.manifest_path(20)));
  EXPECT_EQ(store.newest()->step, 10u);
}

}  // namespace
}  // namespace ptrain
