#include "core/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.hpp"

namespace ptrain {

std::string file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "a file of an unknown kind";
}

InputFile::InputFile(const std::string& path, const std::string& what, const std::string& label)
    : label_(label.empty() ? path : label) {
  if (path.empty()) throw Error((label.empty() ? std::string("''") : label) + ": an empty path, not " + what);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(label_ + (errno == ENOENT ? std::string(": no such file") : ": cannot open: " + std::string(std::strerror(errno))));
  if (!S_ISREG(st.st_mode)) throw Error(label_ + ": is " + file_kind(st.st_mode) + ", not a regular file");
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw Error(label_ + ": cannot open: " + std::strerror(errno));
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string kind = file_kind(st.st_mode);
    ::close(fd_);
    throw Error(label_ + ": is " + kind + ", not a regular file");
  }
  // Reads of a regular file never block; clear the flag all the same.
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::InputFile(InputFile&& other) noexcept
    : label_(std::move(other.label_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

size_t InputFile::read(void* dst, size_t n) {
  auto* out = static_cast<char*>(dst);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd_, out + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw Error(label_ + ": read error: " + std::strerror(errno));
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

void InputFile::seek(uint64_t offset) {
  if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0)
    throw Error(label_ + ": cannot seek: " + std::strerror(errno));
}

std::string read_input_file(const std::string& path, size_t max_bytes, const std::string& what,
                            const std::string& label) {
  InputFile file(path, what, label);
  const std::string& name = label.empty() ? path : label;
  if (file.size() > max_bytes)
    throw Error(name + ": " + std::to_string(file.size()) + " bytes, over the limit of " + std::to_string(max_bytes) +
                " bytes for " + what);
  std::string text(static_cast<size_t>(file.size()), '\0');
  text.resize(file.read(text.data(), text.size()));  // shrank while read: what is there
  char more = 0;
  if (file.read(&more, 1) != 0) throw Error(name + ": grew while being read");
  return text;
}

}  // namespace ptrain
