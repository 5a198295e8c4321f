#include "data/idx_file.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::ScratchDir;
using test::write_bytes;
using test::write_gzip;

using test::idx_bytes;

std::vector<uint8_t> counting_data(size_t n) {
  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i * 7 + 3);
  return data;
}

// Runs read_idx_ubyte, expecting an Error; returns its message.
std::string error_of(const std::string& path, size_t rank) {
  try {
    read_idx_ubyte(path, rank);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error reading " << path;
  return "";
}

void expect_error(const std::string& path, size_t rank, const std::vector<std::string>& words) {
  const std::string message = error_of(path, rank);
  EXPECT_EQ(message.rfind(path, 0), 0u) << "message does not start with the path: " << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  for (const auto& word : words)
    EXPECT_NE(message.find(word), std::string::npos) << "'" << word << "' not in: " << message;
}

TEST(IdxFile, ReadsPlainFile) {
  ScratchDir dir;
  const auto data = counting_data(4 * 3 * 2);
  write_bytes(dir.file("images-idx3-ubyte"), idx_bytes({4, 3, 2}, data));
  const IdxArray array = read_idx_ubyte(dir.file("images-idx3-ubyte"), 3);
  EXPECT_EQ(array.dims, (std::vector<uint32_t>{4, 3, 2}));
  EXPECT_EQ(array.count(), 4u);
  EXPECT_EQ(array.data, data);
}

TEST(IdxFile, ReadsGzipFileByContentNotName) {
  ScratchDir dir;
  const auto data = counting_data(300);
  // Named without .gz: compression is recognised by the gzip magic bytes.
  write_gzip(dir.file("labels-idx1-ubyte"), idx_bytes({300}, data));
  const IdxArray array = read_idx_ubyte(dir.file("labels-idx1-ubyte"), 1);
  EXPECT_EQ(array.dims, (std::vector<uint32_t>{300}));
  EXPECT_EQ(array.data, data);
}

TEST(IdxFile, ReadsLargeGzipFileAcrossChunks) {
  ScratchDir dir;
  const auto data = counting_data(3'000'017);  // several of the reader's 1 MiB chunks
  write_gzip(dir.file("big.gz"), idx_bytes({3'000'017}, data));
  EXPECT_EQ(read_idx_ubyte(dir.file("big.gz"), 1).data, data);
}

TEST(IdxFile, ReadsConcatenatedGzipMembers) {
  ScratchDir dir;
  const auto whole = idx_bytes({10}, counting_data(10));
  write_gzip(dir.file("a.gz"), std::vector<uint8_t>(whole.begin(), whole.begin() + 7));
  write_gzip(dir.file("b.gz"), std::vector<uint8_t>(whole.begin() + 7, whole.end()));
  auto joined = test::read_bytes(dir.file("a.gz"));
  const auto second = test::read_bytes(dir.file("b.gz"));
  joined.insert(joined.end(), second.begin(), second.end());
  write_bytes(dir.file("joined.gz"), joined);
  EXPECT_EQ(read_idx_ubyte(dir.file("joined.gz"), 1).data, counting_data(10));
}

TEST(IdxFile, TruncatedPlainFileSaysExpectedAndFound) {
  ScratchDir dir;
  auto bytes = idx_bytes({10, 10, 10}, counting_data(1000));
  bytes.erase(bytes.end() - 400, bytes.end());
  write_bytes(dir.file("short"), bytes);
  expect_error(dir.file("short"), 3, {"truncated", "expected 1000", "found 600"});
}

TEST(IdxFile, TruncatedHeader) {
  ScratchDir dir;
  auto bytes = idx_bytes({10, 10, 10}, {});
  bytes.resize(9);
  write_bytes(dir.file("short"), bytes);
  expect_error(dir.file("short"), 3, {"truncated", "header", "16", "found 9"});
  write_bytes(dir.file("empty"), {});
  expect_error(dir.file("empty"), 1, {"truncated", "found 0"});
}

TEST(IdxFile, TruncatedGzipFile) {
  ScratchDir dir;
  // Incompressible-ish data, so cutting the gz file in half cuts the IDX data.
  std::vector<uint8_t> data(20000);
  uint32_t x = 12345;
  for (auto& b : data) b = static_cast<uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  write_gzip(dir.file("whole.gz"), idx_bytes({20000}, data));
  auto gz = test::read_bytes(dir.file("whole.gz"));
  gz.resize(gz.size() / 2);
  write_bytes(dir.file("half.gz"), gz);
  expect_error(dir.file("half.gz"), 1, {"truncated", "expected 20000", "gzip"});
}

TEST(IdxFile, GzipCutInsideTrailerIsAnError) {
  ScratchDir dir;
  write_gzip(dir.file("whole.gz"), idx_bytes({50}, counting_data(50)));
  auto gz = test::read_bytes(dir.file("whole.gz"));
  gz.erase(gz.end() - 3, gz.end());  // all data decodes, but the CRC/length trailer is cut
  write_bytes(dir.file("cut.gz"), gz);
  expect_error(dir.file("cut.gz"), 1, {"truncated gzip stream"});
}

TEST(IdxFile, CorruptGzipFile) {
  ScratchDir dir;
  write_gzip(dir.file("whole.gz"), idx_bytes({100, 10, 10}, counting_data(10000)));
  auto gz = test::read_bytes(dir.file("whole.gz"));
  for (size_t i = gz.size() / 2 - 4; i < gz.size() / 2 + 4; ++i) gz[i] ^= 0xA5;
  write_bytes(dir.file("corrupt.gz"), gz);
  expect_error(dir.file("corrupt.gz"), 3, {"gzip"});
}

TEST(IdxFile, GzipWithBadChecksum) {
  ScratchDir dir;
  write_gzip(dir.file("whole.gz"), idx_bytes({100}, counting_data(100)));
  auto gz = test::read_bytes(dir.file("whole.gz"));
  gz[gz.size() - 8] ^= 0x01;  // the CRC-32 in the trailer
  write_bytes(dir.file("crc.gz"), gz);
  expect_error(dir.file("crc.gz"), 1, {"corrupt gzip", "check"});
}

TEST(IdxFile, JunkAfterGzipStream) {
  ScratchDir dir;
  write_gzip(dir.file("whole.gz"), idx_bytes({100}, counting_data(100)));
  auto gz = test::read_bytes(dir.file("whole.gz"));
  gz.push_back(0x42);
  gz.push_back(0x42);
  write_bytes(dir.file("junk.gz"), gz);
  expect_error(dir.file("junk.gz"), 1, {"after the end of the gzip stream"});
}

TEST(IdxFile, WrongMagic) {
  ScratchDir dir;
  auto bytes = idx_bytes({10}, counting_data(10));
  bytes[0] = 'P';
  bytes[1] = 'K';
  write_bytes(dir.file("zip"), bytes);
  expect_error(dir.file("zip"), 1, {"not an IDX file", "magic"});
}

TEST(IdxFile, WrongType) {
  ScratchDir dir;
  write_bytes(dir.file("floats"), idx_bytes({10}, counting_data(40), 0x0D));
  expect_error(dir.file("floats"), 1, {"type 0x0d", "unsigned byte"});
}

TEST(IdxFile, WrongRank) {
  ScratchDir dir;
  write_bytes(dir.file("labels"), idx_bytes({10}, counting_data(10)));
  expect_error(dir.file("labels"), 3, {"rank 1", "expected 3"});
}

TEST(IdxFile, ZeroDimension) {
  ScratchDir dir;
  write_bytes(dir.file("zero"), idx_bytes({10, 0, 5}, {}));
  expect_error(dir.file("zero"), 3, {"dimension 1", "zero"});
}

TEST(IdxFile, AbsurdDimensionsAreRefusedBeforeAllocating) {
  ScratchDir dir;
  write_bytes(dir.file("huge"), idx_bytes({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {}));
  expect_error(dir.file("huge"), 3, {"exceed", "bytes"});
  // Just under the limit, but the file is tiny: truncated, not out of memory.
  write_gzip(dir.file("big-claim.gz"), idx_bytes({1u << 30}, counting_data(10)));
  expect_error(dir.file("big-claim.gz"), 1, {"truncated", "expected 1073741824", "found 10"});
}

TEST(IdxFile, ExtraTrailingBytes) {
  ScratchDir dir;
  auto bytes = idx_bytes({5, 2, 2}, counting_data(20));
  bytes.insert(bytes.end(), {1, 2, 3});
  write_bytes(dir.file("long"), bytes);
  expect_error(dir.file("long"), 3, {"3 extra bytes", "20 data bytes"});
  write_gzip(dir.file("long.gz"), bytes);
  expect_error(dir.file("long.gz"), 3, {"3 extra bytes"});
}

// Every prefix of a valid file, plain or gzipped, is an error: never a crash,
// never a silent short read.
TEST(IdxFile, EveryCutIsAnError) {
  ScratchDir dir;
  const auto plain = idx_bytes({3, 4, 5}, counting_data(60));
  write_gzip(dir.file("whole.gz"), plain);
  const auto gz = test::read_bytes(dir.file("whole.gz"));
  for (const auto* whole : {&plain, &gz})
    for (size_t cut = 0; cut < whole->size(); ++cut) {
      const std::string path = dir.file("cut-" + std::to_string(cut));
      write_bytes(path, std::vector<uint8_t>(whole->begin(), whole->begin() + static_cast<long>(cut)));
      SCOPED_TRACE(path);
      expect_error(path, 3, {});
    }
}

// A flipped byte in a gzip file is caught (CRC, length, deflate or IDX checks)
// unless it sits in a header field no check covers, and then the data is intact.
TEST(IdxFile, EveryFlippedGzipByteIsCaughtOrHarmless) {
  ScratchDir dir;
  const auto data = counting_data(200);
  write_gzip(dir.file("whole.gz"), idx_bytes({10, 4, 5}, data));
  const auto gz = test::read_bytes(dir.file("whole.gz"));
  for (size_t i = 0; i < gz.size(); ++i) {
    auto flipped = gz;
    flipped[i] ^= 0x10;
    const std::string path = dir.file("flip-" + std::to_string(i));
    write_bytes(path, flipped);
    try {
      EXPECT_EQ(read_idx_ubyte(path, 3).data, data) << "byte " << i << " changed the data silently";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path, 0), 0u) << e.what();
    }
  }
}

TEST(IdxFile, MissingFile) {
  ScratchDir dir;
  expect_error(dir.file("nope-idx1-ubyte.gz"), 1, {"no such file"});
}

TEST(IdxFile, DirectoryIsNotAFile) {
  ScratchDir dir;
  expect_error(dir.path().string(), 1, {"directory"});
}

// A FIFO blocked fopen() until a writer came (a data directory with one hung
// ptrain train); a device such as /dev/zero never ends.
TEST(IdxFile, FifoAndDevicesAreRefusedWithoutBlocking) {
  ScratchDir dir;
  const std::string fifo = dir.file("train-images-idx3-ubyte");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  auto message = std::async(std::launch::async, [&] { return error_of(fifo, 3); });
  if (message.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "read_idx_ubyte blocked on a FIFO";
    const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);  // frees the reader, so the test ends
    if (fd >= 0) ::close(fd);
  }
  const std::string text = message.get();
  EXPECT_NE(text.find("FIFO"), std::string::npos) << text;
  EXPECT_NE(text.find("not a regular file"), std::string::npos) << text;
  expect_error("/dev/zero", 3, {"character device", "not a regular file"});
}

// A gzip bomb: a good array, then 8 MiB of zeros in a few kB (the real ones hold gigabytes). The
// extra bytes are refused after counting a MiB of them, not all.
TEST(IdxFile, GzipBombAfterTheDataIsRefusedWithoutInflatingIt) {
  ScratchDir dir;
  auto bytes = idx_bytes({5, 2, 2}, counting_data(20));
  bytes.resize(bytes.size() + (size_t{8} << 20), 0);
  write_gzip(dir.file("bomb.gz"), bytes);
  expect_error(dir.file("bomb.gz"), 3, {"over 1048576 extra bytes", "20 data bytes"});
}

// The caller's limit (Fashion-MNIST: a fifth of the machine's memory) refuses a
// header before its data is inflated, and says why.
TEST(IdxFile, TheCallersLimitRefusesTheHeader) {
  ScratchDir dir;
  write_gzip(dir.file("big.gz"), idx_bytes({100, 10, 10}, counting_data(10000)));
  try {
    read_idx_ubyte(dir.file("big.gz"), 3, 9999, "a test's limit");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("100 x 10 x 10 exceed the limit of 9999 bytes (a test's limit)"), std::string::npos) << text;
  }
  EXPECT_EQ(read_idx_ubyte(dir.file("big.gz"), 3, 10000, "a test's limit").data.size(), 10000u);
}

}  // namespace
}  // namespace ptrain
