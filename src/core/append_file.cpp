#include "core/append_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <span>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace ptrain {

AppendFile AppendFile::create(const std::string& path, std::string_view first, const std::string& label) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) throw Error(label + ": exists already");
  write_file_atomically(path, std::as_bytes(std::span(first.data(), first.size())), label);
  return open_existing(path, label);
}

AppendFile AppendFile::open_existing(const std::string& path, const std::string& label) {
  // O_NOFOLLOW: never through a symlink; O_NONBLOCK: a FIFO does not block the open.
  const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) throw Error(label + ": is a symbolic link; not written");
    if (errno == EISDIR) throw Error(label + ": is a directory");
    throw Error(label + ": cannot open (" + errno_text() + ")");
  }
  AppendFile file(fd, label);
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(label + ": " + errno_text());
  if (!S_ISREG(st.st_mode)) throw Error(label + ": is not a regular file (a FIFO, socket or device); not written");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) throw Error(label + ": another process is writing it (it is locked)");
    throw Error(label + ": cannot lock (" + errno_text() + ")");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return file;
}

AppendFile::AppendFile(AppendFile&& other) noexcept : fd_(other.fd_), label_(std::move(other.label_)) {
  other.fd_ = -1;
}

AppendFile& AppendFile::operator=(AppendFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    label_ = std::move(other.label_);
    other.fd_ = -1;
  }
  return *this;
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);  // the lock goes with it
}

std::string AppendFile::read_all() const {
  std::string text;
  char buffer[1 << 16];
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(fd_, buffer, sizeof buffer, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(label_ + ": read failed (" + errno_text() + ")");
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
    offset += n;
  }
}

void AppendFile::truncate(size_t size) {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) throw Error(label_ + ": cannot truncate (" + errno_text() + ")");
  if (::fsync(fd_) != 0) throw Error(label_ + ": cannot flush to disk (" + errno_text() + ")");
}

void AppendFile::append(std::string_view text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(label_ + ": write failed (" + (n < 0 ? errno_text() : std::string("no progress")) + ")");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd_) != 0) throw Error(label_ + ": cannot flush to disk (" + errno_text() + ")");
}

}  // namespace ptrain
