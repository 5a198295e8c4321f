#pragma once
// A file that grows a line at a time and survives a kill: each append is
// written whole and flushed to disk before it returns, so a killed writer
// loses at most the line it was writing (which a reader finds torn: no final
// newline). Opened with the checks of core/atomic_file.hpp: never through a
// symlink, and only a regular file (no FIFO, socket or device). The file is
// locked (flock) while open, so a second writer is refused instead of
// interleaving its lines.
#include <cstddef>
#include <string>
#include <string_view>

namespace ptrain {

class AppendFile {
 public:
  // Creates `path` holding `first` (atomically: complete or absent) and opens
  // it. Throws ptrain::Error "<label>: ..." if it exists or cannot be written.
  static AppendFile create(const std::string& path, std::string_view first, const std::string& label);
  // Opens an existing regular file for reading and appending.
  static AppendFile open_existing(const std::string& path, const std::string& label);

  AppendFile(AppendFile&& other) noexcept;
  AppendFile& operator=(AppendFile&& other) noexcept;
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;
  ~AppendFile();

  // Everything in the file now.
  std::string read_all() const;
  // Cuts the file to its first `size` bytes, flushed to disk.
  void truncate(size_t size);
  // Appends `text` whole and flushes it to disk.
  void append(std::string_view text);

 private:
  AppendFile(int fd, std::string label) : fd_(fd), label_(std::move(label)) {}
  int fd_ = -1;
  std::string label_;
};

}  // namespace ptrain
