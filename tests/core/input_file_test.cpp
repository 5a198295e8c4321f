#include "core/input_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>

#include "test_support.hpp"

namespace ptrain {
namespace {

namespace fs = std::filesystem;

TEST(InputFile, ReadsARegularFileAndOneBehindASymlink) {
  test::ScratchDir dir;
  test::write_bytes(dir.file("plan.json"), {'{', '}'});
  fs::create_symlink(dir.file("plan.json"), dir.file("link.json"));
  EXPECT_EQ(read_input_file(dir.file("link.json"), 100, "a plan file"), "{}");
  InputFile file(dir.file("plan.json"), "a plan file");
  EXPECT_EQ(file.size(), 2u);
  char bytes[4] = {};
  EXPECT_EQ(file.read(bytes, 4), 2u);
  file.seek(1);
  EXPECT_EQ(file.read(bytes, 4), 1u);
  EXPECT_EQ(bytes[0], '}');
}

// A FIFO blocked the open (or the read) until a writer came: a data set or a
// plan file that is one hung ptrain. It is refused at once.
TEST(InputFile, AFifoIsRefusedWithoutBlocking) {
  test::ScratchDir dir;
  const std::string fifo = dir.file("plan.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto message = std::async(std::launch::async, [&] {
    return test::error_message([&] { read_input_file(fifo, 100, "a plan file", "plan file " + fifo); });
  });
  if (message.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "blocked on a FIFO";
    const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);  // frees the reader, so the test ends
    if (fd >= 0) ::close(fd);
  }
  EXPECT_EQ(message.get(), "plan file " + fifo + ": is a FIFO (named pipe), not a regular file");
}

TEST(InputFile, DevicesDirectoriesLoopsAndMissingFilesAreNamed) {
  test::ScratchDir dir;
  fs::create_symlink("loop-b", dir.file("loop-a"));
  fs::create_symlink("loop-a", dir.file("loop-b"));
  auto error = [](const std::string& path) { return test::error_message([&] { InputFile(path, "a data file"); }); };
  EXPECT_EQ(error("/dev/zero"), "/dev/zero: is a character device, not a regular file");
  EXPECT_EQ(error(dir.path().string()), dir.path().string() + ": is a directory, not a regular file");
  EXPECT_EQ(error(dir.file("none")), dir.file("none") + ": no such file");
  EXPECT_NE(error(dir.file("loop-a")).find("Too many levels of symbolic links"), std::string::npos);
  EXPECT_EQ(test::error_message([] { InputFile("", "a data file", "--data"); }), "--data: an empty path, not a data file");
}

TEST(InputFile, AFileLargerThanItsLimitIsRefused) {
  test::ScratchDir dir;
  test::write_bytes(dir.file("big.csv"), std::vector<uint8_t>(101, 'x'));
  EXPECT_EQ(test::error_message([&] { read_input_file(dir.file("big.csv"), 100, "a CSV file", "--codec-costs big"); }),
            "--codec-costs big: 101 bytes, over the limit of 100 bytes for a CSV file");
}

}  // namespace
}  // namespace ptrain
