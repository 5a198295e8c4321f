#include "core/temporary_files.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/atomic_file.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

namespace fs = std::filesystem;

TEST(TemporaryFiles, AGuardHoldsItsFileUntilReleased) {
  const int before = registered_temporary_files();
  {
    TemporaryFileGuard guard("/tmp/a-temporary-file");
    EXPECT_EQ(registered_temporary_files(), before + 1);
    guard.release();
    EXPECT_EQ(registered_temporary_files(), before);
  }
  { TemporaryFileGuard guard("/tmp/another"); }
  EXPECT_EQ(registered_temporary_files(), before);
  std::string data(1000, 'x');
  test::ScratchDir dir;
  write_file_atomically(dir.file("out"), std::as_bytes(std::span(data)), "out");
  EXPECT_EQ(registered_temporary_files(), before);  // released once renamed into place
}

// A SIGTERM or SIGINT while a temporary file exists (a checkpoint or report
// being written) removes it, prints one line and ends the process by that
// signal. Before, the hidden temporary file stayed in the checkpoint directory.
TEST(TemporaryFiles, ASignalRemovesThemAndEndsTheProcessByIt) {
  for (int sig : {SIGTERM, SIGINT}) {
    test::ScratchDir dir;
    const std::string tmp = dir.file(".report.json.Ab12Cd");
    test::write_bytes(tmp, {'{'});
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      remove_temporary_files_on_signals();
      TemporaryFileGuard guard(tmp);
      ::raise(sig);
      ::_exit(0);  // not reached: the signal ends the process
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_FALSE(fs::exists(tmp));
  }
}

// A guard that creates its file holds it from before it exists: a new, empty
// file of mode 0600 under the prefix, another name for the next one, and none
// (nothing held either) where it cannot be made.
TEST(TemporaryFiles, AGuardCreatesANewFileItHolds) {
  test::ScratchDir dir;
  const int before = registered_temporary_files();
  const std::string prefix = dir.file(".out.");
  std::string first, second;
  TemporaryFileGuard a, b;
  const int fa = a.create(prefix, first);
  const int fb = b.create(prefix, second);
  ASSERT_GE(fa, 0);
  ASSERT_GE(fb, 0);
  ::close(fa);
  ::close(fb);
  EXPECT_EQ(registered_temporary_files(), before + 2);
  EXPECT_NE(first, second);
  for (const auto& path : {first, second}) {
    EXPECT_EQ(path.size(), prefix.size() + 6) << path;
    EXPECT_EQ(path.rfind(prefix, 0), 0u) << path;
    EXPECT_EQ(fs::file_size(path), 0u) << path;
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write)
        << path;
  }
  a.release();
  b.release();
  EXPECT_EQ(registered_temporary_files(), before);

  std::string nowhere;
  TemporaryFileGuard c;
  EXPECT_EQ(c.create(dir.file("no-such-dir/.out."), nowhere), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(registered_temporary_files(), before);
}

// The file a guard created is removed by a signal like any other it holds.
TEST(TemporaryFiles, ASignalRemovesAFileTheGuardCreated) {
  test::ScratchDir dir;
  const std::string prefix = dir.file(".report.json.");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    remove_temporary_files_on_signals(false);
    std::string path;
    TemporaryFileGuard guard;
    if (guard.create(prefix, path) < 0) ::_exit(3);
    ::raise(SIGTERM);
    ::_exit(0);  // not reached: the signal ends the process
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(fs::is_empty(dir.path())) << "a temporary file was left";
}

}  // namespace
}  // namespace ptrain
