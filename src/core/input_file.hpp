#pragma once
// Files ptrain reads (data sets, plan files, reports, cost tables): only a
// regular file. A FIFO would block the open, or the read, forever; a device
// such as /dev/zero never ends; a directory is no file. The type is checked
// before opening and again on the open descriptor (opened without blocking),
// so a path swapped in between is caught too. Symbolic links are followed: a
// data set linked into place is an ordinary thing to read.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ptrain {

class InputFile {
 public:
  // Throws ptrain::Error "<label>: is a FIFO (named pipe), not a regular
  // file", "<label>: no such file" and the like; the label is the path unless
  // given ("plan file p.json"); `what` names the file an empty path is not
  // ("an IDX file", "a plan file").
  InputFile(const std::string& path, const std::string& what, const std::string& label = "");
  InputFile(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  InputFile& operator=(InputFile&&) = delete;
  ~InputFile();

  // The file's size when it was opened.
  uint64_t size() const { return size_; }
  // Reads n bytes, or fewer at the end of the file; a read error is an Error naming the file.
  size_t read(void* dst, size_t n);
  // Moves to `offset` bytes from the start.
  void seek(uint64_t offset);

 private:
  std::string label_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole of a regular file as text, refused ("<label>: ...") when it is
// not one or holds more than `max_bytes`.
std::string read_input_file(const std::string& path, size_t max_bytes, const std::string& what,
                            const std::string& label = "");

// "a FIFO (named pipe)", "a directory", "a character device"...: what a stat mode is.
std::string file_kind(unsigned mode);

}  // namespace ptrain
