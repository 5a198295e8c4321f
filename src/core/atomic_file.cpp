#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/temporary_files.hpp"

namespace ptrain {

namespace {

// Throws the WriteError of the call that just failed: "<label>: <what> (<errno's text>)".
[[noreturn]] void write_failed(const std::string& label, const std::string& what) {
  const int code = errno;
  throw WriteError(label + ": " + what + " (" + std::strerror(code) + ")", code);
}

std::string directory_of(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

// Closes a descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void write_all(int fd, std::span<const std::byte> bytes, const std::string& label) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) write_failed(label, "write failed");
    if (n == 0) throw WriteError(label + ": write failed (no progress)", EIO);
    done += static_cast<size_t>(n);
  }
}

// check_output_path but for the probe: what creating the file itself tells anyway.
void check_target(const std::string& path, const std::string& label) {
  if (path.empty()) throw Error(label + ": empty path");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) throw Error(label + ": is a symbolic link; not replaced");
    if (S_ISDIR(st.st_mode)) throw Error(label + ": is a directory");
    if (!S_ISREG(st.st_mode)) throw Error(label + ": is not a regular file (a FIFO, socket or device); not replaced");
  } else if (errno != ENOENT) {
    throw Error(label + ": " + errno_text());
  }
  const std::string dir = directory_of(path);
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode))
    throw Error(label + ": directory " + dir + " does not exist");
}

}  // namespace

void check_output_path(const std::string& path, const std::string& label) {
  check_target(path, label);
  const std::string dir = directory_of(path);
  // Whether a file can be made there, by making one: access() says yes to
  // root in /proc or on a read-only bind mount, and the run's result was
  // lost at its end.
  std::string probe;
  TemporaryFileGuard guard;
  const int fd = guard.create((std::filesystem::path(dir) / ".ptrain-probe.").string(), probe);
  if (fd < 0) throw Error(label + ": cannot create a file in " + dir + " (" + errno_text() + ")");
  ::close(fd);
  ::unlink(probe.c_str());
}

void sync_directory(const std::string& dir) {
  Fd directory;
  directory.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory.fd >= 0) ::fsync(directory.fd);
}

void write_file_atomically(const std::string& path, std::span<const std::byte> bytes, const std::string& label,
                           Flush flush) {
  const std::span<const std::byte> pieces[] = {bytes};
  write_file_atomically(path, pieces, label, flush);
}

void write_file_atomically(const std::string& path, std::span<const std::span<const std::byte>> pieces,
                           const std::string& label, Flush flush) {
  check_target(path, label);
  const std::string dir = directory_of(path);
  std::string name = ".";  // hidden, and never a name ptrain writes on purpose
  name.append(std::filesystem::path(path).filename().string()).append(".");
  std::string tmp;
  TemporaryFileGuard guard;  // a SIGINT or SIGTERM at any moment removes the file
  Fd file;
  file.fd = guard.create((std::filesystem::path(dir) / name).string(), tmp);
  if (file.fd < 0) write_failed(label, "cannot create a temporary file in " + dir);
  try {
    for (const auto piece : pieces) write_all(file.fd, piece, label);
    if (flush != Flush::none && ::fsync(file.fd) != 0) write_failed(label, "cannot flush to disk");
    // Made 0600; a result file is as readable as any other the user writes.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(file.fd, 0666 & ~mask);
    if (::close(file.fd) != 0) {
      file.fd = -1;
      write_failed(label, "write failed");
    }
    file.fd = -1;
    if (::rename(tmp.c_str(), path.c_str()) != 0) write_failed(label, "cannot rename into place");
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  guard.release();
  if (flush == Flush::all) sync_directory(dir);  // the rename itself on disk
}

void flush_file(const std::string& path, const std::string& label) {
  Fd file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (file.fd < 0) write_failed(label, "cannot open to flush to disk");
  if (::fsync(file.fd) != 0) write_failed(label, "cannot flush to disk");
}

std::vector<std::byte> read_regular_file(const std::string& path, const std::string& label) {
  Fd file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (file.fd < 0) {
    if (errno == ELOOP) throw Error(label + ": is a symbolic link; not read");
    throw Error(label + ": cannot open (" + errno_text() + ")");
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw Error(label + ": " + errno_text());
  if (!S_ISREG(st.st_mode)) throw Error(label + ": is not a regular file");
  std::vector<std::byte> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(file.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(label + ": read failed (" + errno_text() + ")");
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);  // shrank while read: what is there
  return bytes;
}

}  // namespace ptrain
