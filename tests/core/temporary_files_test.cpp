#include "core/temporary_files.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

}  // namespace
}  // namespace ptrain
