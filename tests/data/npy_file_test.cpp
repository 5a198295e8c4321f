#include "data/npy_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/data_registry.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

using test::ScratchDir;
using test::write_bytes;

// A .npy file as np.save writes it: magic, version, little-endian header
// length, then the dict padded with spaces and a newline so that the data
// starts at a multiple of 64 bytes.
std::vector<uint8_t> npy_file(const std::string& dict, const std::vector<uint8_t>& data, int major = 1) {
  const size_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (size_t i = 0; i < preamble - 8; ++i) bytes.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

std::string npy_dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

std::vector<uint8_t> npy_bytes(const std::string& descr, const std::string& shape,
                               const std::vector<uint8_t>& data, int major = 1) {
  return npy_file(npy_dict(descr, shape), data, major);
}

// Values as little-endian bytes, whatever the host's byte order.
template <typename T>
std::vector<uint8_t> le_bytes(const std::vector<T>& values) {
  std::vector<uint8_t> bytes;
  for (T v : values) {
    std::array<uint8_t, sizeof(T)> raw;
    std::memcpy(raw.data(), &v, sizeof(T));
    if constexpr (std::endian::native == std::endian::big) std::reverse(raw.begin(), raw.end());
    bytes.insert(bytes.end(), raw.begin(), raw.end());
  }
  return bytes;
}

std::vector<uint8_t> counting_bytes(size_t n) {
  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i * 7 + 3);
  return data;
}

std::string error_of(const std::string& path) {
  try {
    read_npy(path);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error reading " << path;
  return "";
}

// One line, naming `file` first, and holding every word.
void expect_message(const std::string& message, const std::string& file,
                    const std::vector<std::string>& words) {
  EXPECT_EQ(message.rfind(file, 0), 0u) << "message does not start with the path: " << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  for (const auto& word : words)
    EXPECT_NE(message.find(word), std::string::npos) << "'" << word << "' not in: " << message;
}

void expect_error(const std::string& path, const std::vector<std::string>& words) {
  expect_message(error_of(path), path, words);
}

template <typename Action>
void expect_error_from(Action action, const std::string& file, const std::vector<std::string>& words) {
  expect_message(test::error_message(action), file, words);
}

template <typename T>
void expect_reads_as(const std::string& descr, NpyType type, const std::vector<T>& values) {
  SCOPED_TRACE(descr);
  ScratchDir dir;
  const auto data = le_bytes(values);
  write_bytes(dir.file("a.npy"), npy_bytes(descr, "(" + std::to_string(values.size()) + ",)", data));
  const NpyArray array = read_npy(dir.file("a.npy"));
  EXPECT_EQ(array.type, type);
  EXPECT_EQ(npy_type_name(type), descr);
  EXPECT_EQ(npy_type_size(type), sizeof(T));
  EXPECT_EQ(array.shape, (std::vector<uint64_t>{values.size()}));
  EXPECT_EQ(array.count(), values.size());
  ASSERT_EQ(array.data.size(), data.size());
  EXPECT_EQ(std::memcmp(array.data.data(), data.data(), data.size()), 0);
  const auto floats = npy_to_float(array);
  const auto ints = npy_to_int64(array, "a.npy");
  ASSERT_EQ(floats.size(), values.size());
  ASSERT_EQ(ints.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(floats[i], static_cast<float>(values[i])) << i;
    EXPECT_EQ(ints[i], static_cast<int64_t>(values[i])) << i;
  }
}

TEST(NpyFile, ReadsEveryDtype) {
  expect_reads_as<bool>("|b1", NpyType::Bool, {false, true, true, false, true});
  expect_reads_as<uint8_t>("|u1", NpyType::UInt8, {0, 1, 127, 128, 255});
  expect_reads_as<int8_t>("|i1", NpyType::Int8, {-128, -1, 0, 1, 127});
  expect_reads_as<uint16_t>("<u2", NpyType::UInt16, {0, 1, 255, 256, 65535});
  expect_reads_as<int16_t>("<i2", NpyType::Int16, {-32768, -1, 0, 256, 32767});
  expect_reads_as<uint32_t>("<u4", NpyType::UInt32, {0, 1, 65536, 16777216, 4294967295u});
  expect_reads_as<int32_t>(
      "<i4", NpyType::Int32,
      {std::numeric_limits<int32_t>::min(), -1, 0, 1 << 20, std::numeric_limits<int32_t>::max()});
  expect_reads_as<uint64_t>("<u8", NpyType::UInt64,
                            {0, 1, uint64_t{1} << 32, uint64_t{1} << 53,
                             static_cast<uint64_t>(std::numeric_limits<int64_t>::max())});
  expect_reads_as<int64_t>(
      "<i8", NpyType::Int64,
      {std::numeric_limits<int64_t>::min(), -1, 0, int64_t{1} << 40, std::numeric_limits<int64_t>::max()});
  expect_reads_as<float>("<f4", NpyType::Float32, {-16777216.f, -1.f, 0.f, 3.f, 1e10f});
  expect_reads_as<double>("<f8", NpyType::Float64, {-1e15, -1., 0., 7., 9007199254740992.});
}

TEST(NpyFile, FloatValuesConvertAsTheyAre) {
  ScratchDir dir;
  write_bytes(dir.file("f.npy"), npy_bytes("<f8", "(3,)", le_bytes<double>({0.1, -2.5, 1e300})));
  const auto floats = npy_to_float(read_npy(dir.file("f.npy")));
  EXPECT_EQ(floats, (std::vector<float>{0.1f, -2.5f, std::numeric_limits<float>::infinity()}));
}

TEST(NpyFile, ReadsVersions1To3) {
  ScratchDir dir;
  const auto data = le_bytes<int32_t>({5, -6, 7});
  for (int major : {1, 2, 3}) {
    SCOPED_TRACE(major);
    const std::string path = dir.file(std::to_string(major) + "-version.npy");
    const auto bytes = npy_bytes("<i4", "(3,)", data, major);
    EXPECT_EQ((bytes.size() - data.size()) % 64, 0u);  // the helper aligns as NumPy does
    write_bytes(path, bytes);
    const NpyArray array = read_npy(path);
    EXPECT_EQ(array.shape, (std::vector<uint64_t>{3}));
    EXPECT_EQ(npy_to_int64(array, path), (std::vector<int64_t>{5, -6, 7}));
  }
}

TEST(NpyFile, ReadsScalarShape) {
  ScratchDir dir;
  write_bytes(dir.file("s.npy"), npy_bytes("<f4", "()", le_bytes<float>({2.5f})));
  const NpyArray array = read_npy(dir.file("s.npy"));
  EXPECT_TRUE(array.shape.empty());
  EXPECT_EQ(array.count(), 1u);
  EXPECT_EQ(npy_to_float(array), (std::vector<float>{2.5f}));
}

TEST(NpyFile, ReadsImageShape) {
  ScratchDir dir;
  const auto data = counting_bytes(4 * 28 * 28);
  write_bytes(dir.file("images.npy"), npy_bytes("|u1", "(4, 28, 28)", data, 2));
  const NpyArray array = read_npy(dir.file("images.npy"));
  EXPECT_EQ(array.type, NpyType::UInt8);
  EXPECT_EQ(array.shape, (std::vector<uint64_t>{4, 28, 28}));
  EXPECT_EQ(array.count(), data.size());
  EXPECT_EQ(std::memcmp(array.data.data(), data.data(), data.size()), 0);
}

TEST(NpyFile, ReadsEmptyArrays) {
  ScratchDir dir;
  write_bytes(dir.file("e.npy"), npy_bytes("<f8", "(0,)", {}));
  EXPECT_EQ(read_npy(dir.file("e.npy")).count(), 0u);
  // A zero dimension empties the array however large the others are.
  write_bytes(dir.file("z.npy"), npy_bytes("<f8", "(18446744073709551615, 0)", {}));
  const NpyArray array = read_npy(dir.file("z.npy"));
  EXPECT_EQ(array.count(), 0u);
  EXPECT_TRUE(array.data.empty());
}

// Any key order, no trailing comma, other whitespace, double quotes, Python 2
// longs and NumPy's old 16-byte alignment are all valid headers.
TEST(NpyFile, AcceptsHeaderVariants) {
  ScratchDir dir;
  const auto data = le_bytes<int16_t>({1, 2, 3, 4, 5, 6});
  const std::vector<std::string> dicts = {
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i2'}",
      "{'fortran_order': False, 'descr': '<i2', 'shape': (2,3,)}",
      "{ \"descr\" : \"<i2\" ,\t'shape':(2L, 3L), 'fortran_order':False,\n}",
  };
  for (size_t k = 0; k < dicts.size(); ++k) {
    SCOPED_TRACE(dicts[k]);
    const std::string path = dir.file(std::to_string(k) + "-variant.npy");
    write_bytes(path, npy_file(dicts[k], data));
    const NpyArray array = read_npy(path);
    EXPECT_EQ(array.type, NpyType::Int16);
    EXPECT_EQ(array.shape, (std::vector<uint64_t>{2, 3}));
  }
  // 16-byte alignment, as NumPy before 1.9 wrote.
  std::string header = npy_dict("<i2", "(6,)");
  header.append((16 - (10 + header.size() + 1) % 16) % 16, ' ');
  header += '\n';
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(header.size()), 0};
  for (char c : header) bytes.push_back(static_cast<uint8_t>(c));
  bytes.insert(bytes.end(), data.begin(), data.end());
  write_bytes(dir.file("old.npy"), bytes);
  EXPECT_EQ(read_npy(dir.file("old.npy")).count(), 6u);
}

TEST(NpyFile, TruncatedDataSaysExpectedAndPresent) {
  ScratchDir dir;
  auto bytes = npy_bytes("<f4", "(10, 10)", le_bytes(std::vector<float>(100, 1.f)));
  bytes.erase(bytes.end() - 150, bytes.end());
  write_bytes(dir.file("short.npy"), bytes);
  expect_error(dir.file("short.npy"), {"truncated", "(10, 10) <f4", "needs 400 data bytes", "has 250"});
}

TEST(NpyFile, ShapeLargerThanTheFileIsRefusedBeforeAllocating) {
  ScratchDir dir;
  write_bytes(dir.file("claim.npy"), npy_bytes("<f8", "(1099511627776,)", le_bytes<double>({1.0})));
  expect_error(dir.file("claim.npy"), {"truncated", "needs 8796093022208 data bytes", "has 8"});
}

TEST(NpyFile, ShapeWhoseCountOverflows) {
  ScratchDir dir;
  write_bytes(dir.file("huge.npy"), npy_bytes("|u1", "(4294967296, 4294967296)", {}));
  expect_error(dir.file("huge.npy"), {"(4294967296, 4294967296)", "more elements than fit in 64 bits"});
  // The element count fits, the byte size does not.
  write_bytes(dir.file("bytes.npy"), npy_bytes("<f8", "(4611686018427387904,)", {}));
  expect_error(dir.file("bytes.npy"),
               {"(4611686018427387904,) <f8", "size in bytes does not fit in 64 bits"});
  write_bytes(dir.file("digits.npy"), npy_bytes("<f8", "(99999999999999999999,)", {}));
  expect_error(dir.file("digits.npy"), {"malformed .npy header", "dimension too large"});
}

TEST(NpyFile, TrailingBytes) {
  ScratchDir dir;
  auto bytes = npy_bytes("<i4", "(5,)", le_bytes<int32_t>({1, 2, 3, 4, 5}));
  bytes.insert(bytes.end(), {0, 0, 0});
  write_bytes(dir.file("long.npy"), bytes);
  expect_error(dir.file("long.npy"), {"3 trailing bytes", "20 data bytes", "(5,) <i4"});
}

TEST(NpyFile, BadMagic) {
  ScratchDir dir;
  auto bytes = npy_bytes("<i4", "(1,)", le_bytes<int32_t>({1}));
  bytes[1] = 'n';
  write_bytes(dir.file("magic.npy"), bytes);
  expect_error(dir.file("magic.npy"), {"not a .npy file", "93 6e 55 4d 50 59", "magic"});
  write_bytes(dir.file("archive.npz"), {'P', 'K', 3, 4, 20, 0, 0, 0, 8, 0, 0, 0});
  expect_error(dir.file("archive.npz"), {"not a .npy file", ".npz"});
}

TEST(NpyFile, TruncatedPreambleAndHeader) {
  ScratchDir dir;
  write_bytes(dir.file("empty.npy"), {});
  expect_error(dir.file("empty.npy"), {"truncated", "found 0"});
  write_bytes(dir.file("v2.npy"), {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 100, 0});
  expect_error(dir.file("v2.npy"), {"truncated", "needs 12 bytes, found 10"});
  auto bytes = npy_bytes("<i4", "(1,)", {});
  bytes.resize(40);
  write_bytes(dir.file("header.npy"), bytes);
  expect_error(dir.file("header.npy"), {"truncated", "header needs 118 bytes, found 30"});
}

TEST(NpyFile, UnknownVersion) {
  ScratchDir dir;
  auto bytes = npy_bytes("<i4", "(1,)", le_bytes<int32_t>({1}));
  bytes[6] = 4;
  write_bytes(dir.file("v4.npy"), bytes);
  expect_error(dir.file("v4.npy"), {"unsupported .npy format version 4.0", "1.0, 2.0 and 3.0"});
  bytes[6] = 1;
  bytes[7] = 1;
  write_bytes(dir.file("v11.npy"), bytes);
  expect_error(dir.file("v11.npy"), {"version 1.1"});
}

TEST(NpyFile, HeaderLongerThanTheLimit) {
  ScratchDir dir;
  // Version 2.0 with a header length of 16 MiB: refused before it is read.
  write_bytes(dir.file("long.npy"), {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0, 0, 0, 1, '{', '}'});
  expect_error(dir.file("long.npy"), {"header length 16777216", "limit of 1048576"});
}

TEST(NpyFile, MalformedHeaders) {
  ScratchDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "should be a dict"},
      {"['descr', '<f4']", "should be a dict"},
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'descr': '<f4', 'shape': (1,)}", "missing key 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (1,)}", "missing key 'descr'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", "expected ':'"},
      {"{'descr': '<f4 , 'fortran_order': False, 'shape': (1,)}", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "expected ',' or '}'"},
      {"{'descr': <f4, 'fortran_order': False, 'shape': (1,)}", "expected a quoted dtype"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}", "tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", "needs a comma"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "negative dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,)}", "expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (,)}", "expected a dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", "unexpected text after the dict"},
      {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,)}", "backslash"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'descr", "unterminated string"},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    SCOPED_TRACE(cases[k].first);
    const std::string path = dir.file("bad" + std::to_string(k) + ".npy");
    write_bytes(path, npy_file(cases[k].first, le_bytes<float>({1.f})));
    expect_error(path, {"malformed .npy header", cases[k].second});
  }
}

TEST(NpyFile, BigEndianDtype) {
  ScratchDir dir;
  write_bytes(dir.file("be.npy"), npy_bytes(">f4", "(1,)", {0x3f, 0x80, 0, 0}));
  expect_error(dir.file("be.npy"), {"big-endian dtype '>f4'", "astype('<f4')"});
  // Byte order does not matter for single bytes.
  write_bytes(dir.file("be1.npy"), npy_bytes(">u1", "(1,)", {7}));
  EXPECT_EQ(read_npy(dir.file("be1.npy")).type, NpyType::UInt8);
}

TEST(NpyFile, FortranOrder) {
  ScratchDir dir;
  write_bytes(dir.file("f.npy"), npy_file(npy_dict("<f4", "(2, 3)", true), le_bytes(std::vector<float>(6))));
  expect_error(dir.file("f.npy"), {"Fortran order", "C-ordered", "np.ascontiguousarray"});
}

TEST(NpyFile, UnsupportedDtypesAreNamed) {
  ScratchDir dir;
  write_bytes(dir.file("o.npy"), npy_bytes("|O", "(2,)", counting_bytes(16)));
  expect_error(dir.file("o.npy"), {"object dtype '|O'", "pickled"});
  write_bytes(dir.file("u.npy"), npy_bytes("<U5", "(1,)", counting_bytes(20)));
  expect_error(dir.file("u.npy"), {"unsupported dtype '<U5'", "float32"});
  write_bytes(dir.file("h.npy"), npy_bytes("<f2", "(1,)", counting_bytes(2)));
  expect_error(dir.file("h.npy"), {"unsupported dtype '<f2'"});
  write_bytes(
      dir.file("s.npy"),
      npy_file("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }", counting_bytes(4)));
  expect_error(dir.file("s.npy"), {"structured dtype"});
}

TEST(NpyFile, FifoIsRefusedWithoutHanging) {
  ScratchDir dir;
  const std::string path = dir.file("pipe.npy");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  auto message = std::async(std::launch::async, [&] { return error_of(path); });
  if (message.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "read_npy blocked on a FIFO";
    // Opening the other end (O_RDWR never blocks on Linux) frees the reader, so the test ends.
    const int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  expect_message(message.get(), path, {"FIFO", "not a regular file"});
}

TEST(NpyFile, DirectoryAndDevicesAreNotFiles) {
  ScratchDir dir;
  expect_error(dir.path().string(), {"is a directory"});
  expect_error("/dev/zero", {"is a character device"});  // read naively, it never ends
}

TEST(NpyFile, MissingFile) {
  ScratchDir dir;
  expect_error(dir.file("nope.npy"), {"no such file"});
}

// Every prefix of a valid file is an error: never a crash, never a short read.
TEST(NpyFile, EveryCutIsAnError) {
  ScratchDir dir;
  const auto whole = npy_bytes("<i2", "(2, 5)", le_bytes<int16_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    const std::string path = dir.file("cut-" + std::to_string(cut));
    write_bytes(path, std::vector<uint8_t>(whole.begin(), whole.begin() + static_cast<long>(cut)));
    SCOPED_TRACE(path);
    expect_error(path, {});
  }
}

// A changed byte in the preamble or header is refused with a one-line
// message, or read as something consistent with the file: never a crash.
TEST(NpyFile, EveryChangedHeaderByteIsCaughtOrConsistent) {
  ScratchDir dir;
  const auto whole = npy_bytes("<i2", "(2, 5)", le_bytes<int16_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  for (size_t i = 0; i < whole.size() - 20; ++i)
    for (uint8_t change : {0x01, 0x04, 0x20, 0x80, 0xff}) {
      auto bytes = whole;
      bytes[i] ^= change;
      const std::string path = dir.file("changed-" + std::to_string(i) + "-" + std::to_string(change));
      write_bytes(path, bytes);
      try {
        const NpyArray array = read_npy(path);
        EXPECT_EQ(array.data.size(), array.count() * npy_type_size(array.type)) << path;
      } catch (const Error& e) {
        expect_message(e.what(), path, {});
      }
    }
}

TEST(NpyConvert, Int64RefusesNonIntegralValuesNamingTheIndex) {
  ScratchDir dir;
  write_bytes(dir.file("f.npy"), npy_bytes("<f4", "(4,)", le_bytes<float>({0.f, 1.f, 2.5f, 3.f})));
  const NpyArray array = read_npy(dir.file("f.npy"));
  expect_error_from([&] { npy_to_int64(array, "labels.npy"); }, "labels.npy",
                    {"value 2.5 at index 2", "integer"});

  write_bytes(dir.file("nan.npy"), npy_bytes("<f8", "(2,)", le_bytes<double>({1., std::nan("")})));
  expect_error_from([&] { npy_to_int64(read_npy(dir.file("nan.npy")), "nan.npy"); }, "nan.npy",
                    {"value nan at index 1", "not an integer"});
  write_bytes(dir.file("big.npy"), npy_bytes("<f8", "(1,)", le_bytes<double>({9223372036854775808.})));
  expect_error_from([&] { npy_to_int64(read_npy(dir.file("big.npy")), "big.npy"); }, "big.npy",
                    {"at index 0", "does not fit"});
  write_bytes(dir.file("u8.npy"), npy_bytes("<u8", "(2,)", le_bytes<uint64_t>({1, uint64_t{1} << 63})));
  expect_error_from([&] { npy_to_int64(read_npy(dir.file("u8.npy")), "u8.npy"); }, "u8.npy",
                    {"value 9223372036854775808 at index 1", "does not fit"});
}

TEST(NpyConvert, RefusesAnArrayWhoseDataDoesNotMatchItsShape) {
  NpyArray array;
  array.type = NpyType::Int32;
  array.shape = {3};
  array.data.resize(8);
  EXPECT_THROW(npy_to_float(array), Error);
  EXPECT_THROW(npy_to_int64(array, "x"), Error);
}

struct ClassificationFiles {
  std::string features;
  std::string labels;
};

ClassificationFiles write_set(const ScratchDir& dir, const std::vector<uint8_t>& features,
                              const std::vector<uint8_t>& labels) {
  ClassificationFiles files{dir.file("x.npy"), dir.file("y.npy")};
  write_bytes(files.features, features);
  write_bytes(files.labels, labels);
  return files;
}

TEST(NpyClassification, Uint8FeaturesAreScaledLikeImages) {
  ScratchDir dir;
  const auto pixels = counting_bytes(4 * 28 * 28);
  const auto files = write_set(dir, npy_bytes("|u1", "(4, 28, 28)", pixels),
                               npy_bytes("<i8", "(4,)", le_bytes<int64_t>({3, 0, 9, 1})));
  const Dataset data = load_npy_dataset(files.features, files.labels, "mine", 10);
  EXPECT_EQ(data.name(), "mine");
  EXPECT_EQ(data.size(), 4u);
  EXPECT_EQ(data.sample_shape(), (std::vector<int64_t>{28, 28}));
  EXPECT_EQ(data.num_classes(), 10);
  EXPECT_EQ(data.label(2), 9);
  ASSERT_EQ(data.features().size(), pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i)
    EXPECT_EQ(data.features()[i], static_cast<float>(pixels[i]) / 255.f);
}

TEST(NpyClassification, OneDimensionalFeaturesGiveSamplesOfShapeOne) {
  ScratchDir dir;
  const auto files = write_set(dir, npy_bytes("<f8", "(3,)", le_bytes<double>({0.5, -1.25, 300.})),
                               npy_bytes("<f4", "(3,)", le_bytes<float>({1.f, 0.f, 1.f})));
  const Dataset data = load_npy_dataset(files.features, files.labels, "line", 0);
  EXPECT_EQ(data.sample_shape(), (std::vector<int64_t>{1}));
  EXPECT_EQ(data.num_classes(), 2);  // the largest label + 1
  EXPECT_EQ(std::vector<float>(data.features().begin(), data.features().end()),
            (std::vector<float>{0.5f, -1.25f, 300.f}));  // not scaled
  EXPECT_EQ(std::vector<int64_t>(data.labels().begin(), data.labels().end()),
            (std::vector<int64_t>{1, 0, 1}));
}

TEST(NpyClassification, OtherIntegerFeaturesAreNotScaled) {
  ScratchDir dir;
  const auto files = write_set(dir, npy_bytes("<i2", "(2, 2)", le_bytes<int16_t>({-3, 400, 255, 0})),
                               npy_bytes("|u1", "(2,)", {0, 4}));
  const Dataset data = load_npy_dataset(files.features, files.labels, "ints", 0);
  EXPECT_EQ(data.num_classes(), 5);
  EXPECT_EQ(std::vector<float>(data.features().begin(), data.features().end()),
            (std::vector<float>{-3.f, 400.f, 255.f, 0.f}));
}

TEST(NpyClassification, LabelsOutOfRangeNameFileIndexAndValue) {
  ScratchDir dir;
  const auto features = npy_bytes("<f4", "(3, 2)", le_bytes(std::vector<float>(6, 1.f)));
  auto files = write_set(dir, features, npy_bytes("<i4", "(3,)", le_bytes<int32_t>({0, 10, 2})));
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 10); }, files.labels,
                    {"label 10 at index 1", "outside [0, 10)"});
  files = write_set(dir, features, npy_bytes("<i4", "(3,)", le_bytes<int32_t>({0, 1, -1})));
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 0); }, files.labels,
                    {"label -1 at index 2", "negative"});
  files = write_set(dir, features, npy_bytes("<f8", "(3,)", le_bytes<double>({0., 1.5, 2.})));
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 0); }, files.labels,
                    {"value 1.5 at index 1", "not an integer"});
}

TEST(NpyClassification, CountMismatchBetweenFeaturesAndLabels) {
  ScratchDir dir;
  const auto files = write_set(dir, npy_bytes("<f4", "(3, 2)", le_bytes(std::vector<float>(6, 1.f))),
                               npy_bytes("<i8", "(2,)", le_bytes<int64_t>({0, 1})));
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 0); }, files.features,
                    {"holds 3 samples but", files.labels, "holds 2 labels"});
}

// Found by tools/bad_inputs.sh: test features of another sample shape than
// the training set's are refused naming the test features' flag and file.
TEST(NpyClassification, ATestSetOfOtherSamplesIsRefusedNamingIt) {
  ScratchDir dir;
  NpyOptions options;
  options.train_features = dir.file("train-x.npy");
  options.train_labels = dir.file("train-y.npy");
  options.test_features = dir.file("test-x.npy");
  options.test_labels = dir.file("test-y.npy");
  write_bytes(options.train_features, npy_bytes("<f4", "(2, 4)", le_bytes(std::vector<float>(8, 1.f))));
  write_bytes(options.train_labels, npy_bytes("<i8", "(2,)", le_bytes<int64_t>({0, 1})));
  write_bytes(options.test_features, npy_bytes("<f4", "(2, 5)", le_bytes(std::vector<float>(10, 1.f))));
  write_bytes(options.test_labels, npy_bytes("<i8", "(2,)", le_bytes<int64_t>({0, 1})));
  EXPECT_EQ(test::error_message([&] { options.load(); }),
            "data.test_features: " + options.test_features +
                ": the test set's samples have shape [5], the training set's [4]");
}

TEST(NpyClassification, ShapesThatCannotBeSamplesOrLabels) {
  ScratchDir dir;
  const auto labels = npy_bytes("<i8", "(2,)", le_bytes<int64_t>({0, 1}));
  auto files = write_set(dir, npy_bytes("<f4", "()", le_bytes<float>({1.f})), labels);
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 0); }, files.features,
                    {"shape ()"});
  files = write_set(dir, npy_bytes("<f4", "(0, 3)", {}), labels);
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 0); }, files.features,
                    {"no samples"});
  files = write_set(dir, npy_bytes("<f4", "(2, 0)", {}), labels);
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 0); }, files.features,
                    {"dimension 1", "is zero"});
  files = write_set(dir, npy_bytes("<f4", "(2, 1)", le_bytes<float>({1.f, 2.f})),
                    npy_bytes("<i8", "()", le_bytes<int64_t>({0})));
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 0); }, files.labels,
                    {"shape ()"});
  files = write_set(dir, npy_bytes("<f4", "(2, 1)", le_bytes<float>({1.f, 2.f})),
                    npy_bytes("<i8", "(2, 0)", {}));
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 0); }, files.labels,
                    {"dimension 1", "no targets"});
}

// Labels of shape (N, T): a target per position, a language-modelling set.
TEST(NpyClassification, TwoDimensionalLabelsAreTargetsPerPosition) {
  ScratchDir dir;
  const auto files = write_set(dir, npy_bytes("<i8", "(2, 3)", le_bytes<int64_t>({1, 2, 3, 4, 5, 6})),
                               npy_bytes("<i8", "(2, 3)", le_bytes<int64_t>({2, 3, 4, 5, 6, 7})));
  const Dataset d = load_npy_dataset(files.features, files.labels, "tokens", 8);
  EXPECT_EQ(d.task(), Task::LanguageModel);
  EXPECT_EQ(d.label_shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(d.size(), 2u);
  EXPECT_EQ(d.sample(1)[0], 4.0f);
  EXPECT_EQ(d.targets(1)[2], 7);
}

// uint8 token ids are ids, not pixels: not scaled (they were, and every id
// below 255 became token 0 once the model cast it back to an integer).
TEST(NpyClassification, Uint8TokenIdsAreNotScaled) {
  ScratchDir dir;
  const auto files = write_set(dir, npy_bytes("|u1", "(2, 3)", {1, 2, 3, 4, 5, 255}),
                               npy_bytes("|u1", "(2, 3)", {2, 3, 4, 5, 6, 7}));
  const Dataset d = load_npy_dataset(files.features, files.labels, "tokens", 256);
  EXPECT_EQ(d.task(), Task::LanguageModel);
  EXPECT_EQ(std::vector<float>(d.features().begin(), d.features().end()),
            (std::vector<float>{1.f, 2.f, 3.f, 4.f, 5.f, 255.f}));
}

TEST(NpyClassification, NonFiniteFeaturesNameFileAndIndex) {
  ScratchDir dir;
  const auto labels = npy_bytes("<i8", "(2,)", le_bytes<int64_t>({0, 1}));
  auto files = write_set(
      dir,
      npy_bytes("<f4", "(2, 2)", le_bytes<float>({1.f, 2.f, std::numeric_limits<float>::infinity(), 4.f})),
      labels);
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 0); }, files.features,
                    {"feature inf at index 2 (sample 1)", "not finite"});
  files = write_set(dir, npy_bytes("<f8", "(2, 2)", le_bytes<double>({1., std::nan(""), 3., 4.})), labels);
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 0); }, files.features,
                    {"at index 1 (sample 0)", "not finite"});
  files = write_set(dir, npy_bytes("<f8", "(2, 2)", le_bytes<double>({1., 2., 3., 1e300})), labels);
  expect_error_from([&] { load_npy_dataset(files.features, files.labels, "d", 0); }, files.features,
                    {"at index 3", "1e+300", "float32"});
}

bool python_has_numpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

// Runs a Python script with the scratch directory as its argument.
void run_python(const ScratchDir& dir, const std::string& script) {
  const std::string script_path = dir.file("write.py");
  std::ofstream(script_path) << script;
  const std::string command = "/usr/bin/python3 '" + script_path + "' '" + dir.path().string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(NpyNumpyInterop, LoadsWhatNumpySaves) {
  if (!python_has_numpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy";
  ScratchDir dir;
  run_python(dir,
             "import sys, numpy as np\n"
             "d = sys.argv[1]\n"
             "np.save(d + '/x.npy', np.arange(120, dtype=np.uint8).reshape(10, 3, 4) * 2)\n"
             "np.save(d + '/y.npy', np.arange(10, dtype=np.int64) % 3)\n"
             "for v in (2, 3):\n"
             "    with open(d + '/v%d.npy' % v, 'wb') as f:\n"
             "        np.lib.format.write_array(f, np.array([[1.5, -2], [0, 4]], dtype=np.float32), "
             "version=(v, 0))\n"
             "np.save(d + '/s.npy', np.float64(2.25))\n"
             "np.save(d + '/b.npy', np.array([True, False, True]))\n");
  const Dataset data = load_npy_dataset(dir.file("x.npy"), dir.file("y.npy"), "numpy", 0);
  EXPECT_EQ(data.size(), 10u);
  EXPECT_EQ(data.sample_shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(data.num_classes(), 3);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(data.label(i), static_cast<int64_t>(i % 3));
    for (size_t j = 0; j < 12; ++j)
      EXPECT_EQ(data.sample(i)[j], static_cast<float>((i * 12 + j) * 2) / 255.f);
  }
  for (const char* name : {"v2.npy", "v3.npy"}) {
    const NpyArray array = read_npy(dir.file(name));
    EXPECT_EQ(array.shape, (std::vector<uint64_t>{2, 2})) << name;
    EXPECT_EQ(npy_to_float(array), (std::vector<float>{1.5f, -2.f, 0.f, 4.f})) << name;
  }
  const NpyArray scalar = read_npy(dir.file("s.npy"));
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(npy_to_float(scalar), (std::vector<float>{2.25f}));
  EXPECT_EQ(npy_to_int64(read_npy(dir.file("b.npy")), "b.npy"), (std::vector<int64_t>{1, 0, 1}));
}

// What write_npy writes reads back the same, its data at a multiple of 64 bytes as NumPy aligns it.
TEST(NpyWrite, ArraysReadBackTheSame) {
  ScratchDir dir;
  const std::vector<int64_t> ids = {-3, 0, 7, int64_t{1} << 40, 5, 6};
  const std::vector<float> values = {1.5f, -0.f, 3e-38f, std::numeric_limits<float>::max()};
  struct Case {
    NpyArray array;
    std::vector<uint64_t> shape;
  };
  const std::vector<Case> cases = {
      {npy_array({2, 3}, std::span<const int64_t>(ids)), {2, 3}},
      {npy_array({6}, std::span<const int64_t>(ids)), {6}},
      {npy_array({2, 1, 2}, std::span<const float>(values)), {2, 1, 2}},
      {npy_array({}, std::span<const float>(values).first(1)), {}},
  };
  for (const Case& c : cases) {
    const std::string path = dir.file("a.npy");
    const std::vector<std::byte> bytes = npy_file_bytes(c.array);
    const size_t header = std::to_integer<size_t>(bytes[8]) | std::to_integer<size_t>(bytes[9]) << 8;
    EXPECT_EQ((10 + header) % 64, 0u);
    write_npy(path, c.array, "test");
    const NpyArray back = read_npy(path);
    EXPECT_EQ(back.shape, c.shape);
    EXPECT_EQ(back.type, c.array.type);
    EXPECT_EQ(back.data, c.array.data);
  }
  NpyArray short_data = npy_array({3}, std::span<const float>(values).first(2));
  expect_error_from([&] { (void)npy_file_bytes(short_data); }, "a .npy array of shape (3,) <f4", {"needs 12 bytes", "not 8"});
}

// write_npy_dataset is load_npy_dataset's inverse: images as float32, token ids as int64.
TEST(NpyWrite, DataSetsReadBackAsTheSameSamples) {
  ScratchDir dir;
  const Dataset images("images", {1, 2, 2}, {0.f, 0.25f, 0.5f, 1.f, 0.125f, 0.75f, 1.f, 0.f}, {2, 0}, 3);
  const Dataset tokens = Dataset::token_stream("tokens", {4, 1, 3, 3, 0, 2, 4}, 5).chunked(3);
  for (const Dataset* data : {&images, &tokens}) {
    write_npy_dataset(*data, dir.file("x.npy"), dir.file("y.npy"), "test");
    const Dataset back = load_npy_dataset(dir.file("x.npy"), dir.file("y.npy"), data->name(), data->num_classes());
    EXPECT_EQ(back.task(), data->task()) << data->name();
    EXPECT_EQ(back.sample_shape(), data->sample_shape()) << data->name();
    EXPECT_EQ(back.label_shape(), data->label_shape()) << data->name();
    EXPECT_EQ(std::vector<float>(back.features().begin(), back.features().end()),
              std::vector<float>(data->features().begin(), data->features().end()))
        << data->name();
    EXPECT_EQ(std::vector<int64_t>(back.labels().begin(), back.labels().end()),
              std::vector<int64_t>(data->labels().begin(), data->labels().end()))
        << data->name();
  }
  EXPECT_EQ(read_npy(dir.file("x.npy")).type, NpyType::Int64);  // the tokens, last
  EXPECT_EQ(read_npy(dir.file("x.npy")).shape, (std::vector<uint64_t>{2, 3}));
}

TEST(NpyNumpyInterop, NumpyLoadsWhatPtrainWrites) {
  if (!python_has_numpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy";
  ScratchDir dir;
  const std::vector<int64_t> ids = {1, -2, 3, 4, 5, 6};
  const std::vector<float> values = {0.5f, -1.f, 2.25f};
  write_npy(dir.file("i.npy"), npy_array({3, 2}, std::span<const int64_t>(ids)), "test");
  write_npy(dir.file("f.npy"), npy_array({3}, std::span<const float>(values)), "test");
  run_python(dir,
             "import sys, numpy as np\n"
             "d = sys.argv[1]\n"
             "i, f = np.load(d + '/i.npy'), np.load(d + '/f.npy')\n"
             "assert i.dtype == np.int64 and i.shape == (3, 2), (i.dtype, i.shape)\n"
             "assert i.tolist() == [[1, -2], [3, 4], [5, 6]], i\n"
             "assert f.dtype == np.float32 and f.tolist() == [0.5, -1.0, 2.25], f\n");
}

TEST(NpyNumpyInterop, RefusesWhatItCannotReadFromNumpy) {
  if (!python_has_numpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy";
  ScratchDir dir;
  run_python(dir,
             "import sys, numpy as np\n"
             "d = sys.argv[1]\n"
             "np.save(d + '/big.npy', np.arange(3, dtype='>f4'))\n"
             "np.save(d + '/fortran.npy', np.asfortranarray(np.ones((2, 3), dtype=np.float32)))\n"
             "np.save(d + '/text.npy', np.array(['hello']))\n"
             "np.save(d + '/object.npy', np.array([1, 'a'], dtype=object), allow_pickle=True)\n"
             "np.savez(d + '/both.npz', x=np.zeros(3))\n");
  expect_error(dir.file("big.npy"), {"big-endian dtype '>f4'"});
  expect_error(dir.file("fortran.npy"), {"Fortran order", "np.ascontiguousarray"});
  expect_error(dir.file("text.npy"), {"unsupported dtype '<U5'"});
  expect_error(dir.file("object.npy"), {"object dtype '|O'"});
  expect_error(dir.file("both.npz"), {".npz"});
}

}  // namespace
}  // namespace ptrain
