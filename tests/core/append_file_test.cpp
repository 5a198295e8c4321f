#include "core/append_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "core/atomic_file.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

namespace fs = std::filesystem;

std::string text_of(const std::string& path) {
  const auto bytes = read_regular_file(path, "read");
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

TEST(AppendFile, CreatesWithItsFirstLineAppendsAndReopens) {
  test::ScratchDir dir;
  const std::string path = dir.file("rows.csv");
  {
    AppendFile file = AppendFile::create(path, "header\n", "--csv rows.csv");
    file.append("one\n");
    EXPECT_EQ(file.read_all(), "header\none\n");
  }
  AppendFile again = AppendFile::open_existing(path, "--csv rows.csv");
  again.append("two\n");
  EXPECT_EQ(text_of(path), "header\none\ntwo\n");
  EXPECT_EQ(test::entries_in(dir.path()), 1u);  // no temporary file left
  EXPECT_EQ(test::error_message([&] { AppendFile::create(path, "h\n", "c"); }), "c: exists already");
}

TEST(AppendFile, TruncatesToWhatIsWhole) {
  test::ScratchDir dir;
  const std::string path = dir.file("rows.csv");
  AppendFile file = AppendFile::create(path, "header\nwhole\ntor", "f");
  file.truncate(13);
  file.append("next\n");
  EXPECT_EQ(text_of(path), "header\nwhole\nnext\n");
}

TEST(AppendFile, NeverOpensALinkAFifoOrADirectory) {
  test::ScratchDir dir;
  const std::string target = dir.file("target");
  const std::string keep = "keep me";
  write_file_atomically(target, std::as_bytes(std::span(keep)), "t");
  fs::create_symlink(target, dir.file("link"));
  fs::create_symlink(dir.file("nowhere"), dir.file("dangling"));
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  fs::create_directory(dir.file("sub"));
  EXPECT_EQ(test::error_message([&] { AppendFile::open_existing(dir.file("link"), "--csv link"); }),
            "--csv link: is a symbolic link; not written");
  EXPECT_EQ(test::error_message([&] { AppendFile::open_existing(dir.file("dangling"), "d"); }),
            "d: is a symbolic link; not written");
  EXPECT_EQ(test::error_message([&] { AppendFile::open_existing(dir.file("fifo"), "f"); }),
            "f: is not a regular file (a FIFO, socket or device); not written");
  struct stat null {};
  if (::stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode)) {
    EXPECT_EQ(test::error_message([&] { AppendFile::open_existing("/dev/null", "n"); }),
              "n: is not a regular file (a FIFO, socket or device); not written");
  }
  EXPECT_EQ(test::error_message([&] { AppendFile::open_existing(dir.file("sub"), "s"); }), "s: is a directory");
  EXPECT_EQ(test::error_message([&] { AppendFile::create(dir.file("no/such/rows.csv"), "h\n", "m"); }),
            "m: directory " + dir.file("no/such") + " does not exist");
  EXPECT_EQ(text_of(target), "keep me");
  EXPECT_EQ(test::entries_in(dir.path()), 5u);  // target, link, dangling, fifo, sub: nothing made
}

TEST(AppendFile, ASecondWriterIsRefused) {
  test::ScratchDir dir;
  const std::string path = dir.file("rows.csv");
  AppendFile first = AppendFile::create(path, "header\n", "f");
  EXPECT_EQ(test::error_message([&] { AppendFile::open_existing(path, "--csv rows.csv"); }),
            "--csv rows.csv: another process is writing it (it is locked)");
}

}  // namespace
}  // namespace ptrain
