#include "core/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "test_support.hpp"

namespace ptrain {
namespace {

namespace fs = std::filesystem;

std::span<const std::byte> bytes_of(const std::string& text) { return std::as_bytes(std::span(text)); }

std::string text_of(const std::vector<std::byte>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

TEST(AtomicFile, WritesAndReplacesLeavingNoTemporaryFile) {
  test::ScratchDir dir;
  const std::string path = dir.file("out.json");
  write_file_atomically(path, bytes_of("first"), "out");
  write_file_atomically(path, bytes_of("second, longer"), "out");
  EXPECT_EQ(text_of(read_regular_file(path, "out")), "second, longer");
  EXPECT_EQ(test::entries_in(dir.path()), 1u);
}

TEST(AtomicFile, NeverWritesThroughALinkAFifoOrADirectory) {
  test::ScratchDir dir;
  const std::string target = dir.file("target");
  write_file_atomically(target, bytes_of("keep me"), "t");
  fs::create_symlink(target, dir.file("link"));
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  fs::create_directory(dir.file("sub"));
  EXPECT_EQ(test::error_message([&] { write_file_atomically(dir.file("link"), bytes_of("x"), "--report link"); }),
            "--report link: is a symbolic link; not replaced");
  EXPECT_EQ(test::error_message([&] { write_file_atomically(dir.file("fifo"), bytes_of("x"), "f"); }),
            "f: is not a regular file (a FIFO, socket or device); not replaced");
  EXPECT_EQ(test::error_message([&] { write_file_atomically(dir.file("sub"), bytes_of("x"), "s"); }),
            "s: is a directory");
  EXPECT_EQ(text_of(read_regular_file(target, "t")), "keep me");
  EXPECT_EQ(test::entries_in(dir.path()), 4u);  // target, link, fifo, sub: nothing left behind
}

TEST(AtomicFile, AMissingDirectoryIsNamed) {
  test::ScratchDir dir;
  const std::string path = dir.file("no/such/dir/out");
  EXPECT_EQ(test::error_message([&] { write_file_atomically(path, bytes_of("x"), "o"); }),
            "o: directory " + dir.file("no/such/dir") + " does not exist");
}

TEST(AtomicFile, ReadsOnlyRegularFilesWithoutFollowingLinksOrBlockingOnAFifo) {
  test::ScratchDir dir;
  write_file_atomically(dir.file("real"), bytes_of("data"), "r");
  fs::create_symlink(dir.file("real"), dir.file("link"));
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  EXPECT_EQ(test::error_message([&] { read_regular_file(dir.file("link"), "l"); }), "l: is a symbolic link; not read");
  EXPECT_EQ(test::error_message([&] { read_regular_file(dir.file("fifo"), "f"); }), "f: is not a regular file");
  EXPECT_NE(test::error_message([&] { read_regular_file(dir.file("none"), "n"); }).find("n: cannot open"),
            std::string::npos);
}

// access() tells root it may write anywhere, /proc included; the check makes a
// file to know, so a report that cannot be written is refused before the run,
// not lost at its end.
TEST(AtomicFile, APlaceWhereNoFileCanBeMadeIsRefusedBeforehand) {
  const std::string message = test::error_message([] { check_output_path("/proc/ptrain-report.json", "--report"); });
  EXPECT_EQ(message.rfind("--report: cannot create a file in /proc", 0), 0u) << message;
  test::ScratchDir dir;
  check_output_path(dir.file("report.json"), "--report");
  EXPECT_EQ(test::entries_in(dir.path()), 0u);  // the probe is gone
}

}  // namespace
}  // namespace ptrain
