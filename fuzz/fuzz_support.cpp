#include "fuzz_support.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ptrain::fuzz {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz target: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace

MemoryFile::MemoryFile(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
  if (fd_ < 0) fail(std::string("memfd_create failed for ") + name);
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemoryFile::~MemoryFile() { ::close(fd_); }

const std::string& MemoryFile::hold(std::span<const uint8_t> bytes) {
  if (::ftruncate(fd_, 0) != 0) fail("cannot truncate " + path_);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n <= 0) fail("cannot write " + path_);
    done += static_cast<size_t>(n);
  }
  return path_;
}

ScratchDirectory::ScratchDirectory(const char* name) {
  std::error_code ec;
  const fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
  std::string pattern = (base / (std::string("ptrain-fuzz-") + name + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) fail("cannot make a directory like " + pattern);
  path_ = pattern;
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

void ScratchDirectory::clear() const {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path_, ec)) fs::remove_all(entry.path(), ec);
}

void write_file(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) fail("cannot write " + path);
}

void check_refusal(const Error& error, std::string_view prefix) {
  const std::string_view message = error.what();
  static const bool verbose = std::getenv("PTRAIN_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "refused: %s\n", error.what());
  if (message.empty()) fail("a ptrain::Error with an empty message");
  if (message.find('\n') != std::string_view::npos || message.find('\r') != std::string_view::npos)
    fail("a ptrain::Error message of more than one line: " + std::string(message));
  if (!message.starts_with(prefix))
    fail("a ptrain::Error message that does not start with '" + std::string(prefix) +
         "': " + std::string(message));
}

void require(bool condition, const std::string& what) {
  if (!condition) fail(what);
}

void write_seeds_if_asked(int* argc, char*** argv, const SeedWriter& write) {
  constexpr std::string_view flag = "--write-seeds=";
  for (int i = 1; i < *argc; ++i) {
    const std::string_view arg = (*argv)[i];
    if (!arg.starts_with(flag)) continue;
    const std::string dir(arg.substr(flag.size()));
    fs::create_directories(dir);
    try {
      write(dir);
    } catch (const std::exception& e) {
      fail("writing the seeds into " + dir + ": " + e.what());
    }
    std::exit(0);
  }
}

void write_seed(const std::string& dir, const std::string& name, std::span<const uint8_t> bytes) {
  write_file((fs::path(dir) / name).string(), bytes);
}

void write_dictionary(const std::string& dir, const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) {
    text += '"';
    for (const char ch : word) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
        text += escaped;
      } else {
        text += ch;
      }
    }
    text += "\"\n";
  }
  std::string path = dir;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  write_file(path + ".dict", as_input(text));
}

}  // namespace ptrain::fuzz
