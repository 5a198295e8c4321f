#pragma once
// Files that are complete or absent: written to a fresh temporary file in the
// same directory (an unpredictable name, created with O_EXCL, so no
// symlink or other file is followed or reused), flushed to disk, renamed over
// the target and the directory flushed too. A crash at any moment leaves the
// old file or the new one, never half of either; a SIGINT or SIGTERM leaves
// no temporary file either (core/temporary_files.hpp). A caller that flushes
// later (Flush below) keeps that across a crash of the process, and across a
// power loss once it has flushed.
#include <cerrno>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace ptrain {

// A file that could not be created, written, flushed or renamed into place;
// `code` is the errno of the call that failed.
class WriteError : public Error {
 public:
  WriteError(const std::string& message, int code) : Error(message), code_(code) {}
  int code() const { return code_; }
  bool no_space() const { return code_ == ENOSPC || code_ == EDQUOT; }  // the disk or the quota is full

 private:
  int code_;
};

// Throws ptrain::Error "<label>: ..." when `path` exists and is not a regular
// file (a symlink, FIFO, device or directory is never replaced), when its
// directory is missing, or when nothing can be created there (tried by
// creating and removing a file: access() answers yes to root everywhere).
void check_output_path(const std::string& path, const std::string& label);

// How far write_file_atomically flushes before it returns.
enum class Flush {
  all,   // the file and the rename: on disk, across a power loss
  file,  // the file; its rename once the caller flushes the directory (one flush for several files)
  // Neither: complete or absent across a crash of the process (the page cache
  // outlives a SIGKILL), not across a power loss until the caller flushes the
  // file (flush_file) and the directory (sync_directory).
  none,
};

// Replaces `path` with `bytes` as above (after check_output_path), flushed as
// `flush` says. On failure (a WriteError once the temporary file is begun) it
// is removed and `path` is untouched.
void write_file_atomically(const std::string& path, std::span<const std::byte> bytes, const std::string& label,
                           Flush flush = Flush::all);
// The same with the file's bytes given in pieces, one after another (no copy to join them).
void write_file_atomically(const std::string& path, std::span<const std::span<const std::byte>> pieces,
                           const std::string& label, Flush flush = Flush::all);

// Flushes a file written before (any process's writes: fsync acts on the
// file, not the descriptor) to disk. Throws WriteError "<label>: ..." when it cannot.
void flush_file(const std::string& path, const std::string& label);

// Flushes a directory's entries (the renames into it) to disk; best effort.
void sync_directory(const std::string& dir);

// The whole of a regular file (not a symlink, FIFO or device), read without
// following a symlink. Throws ptrain::Error "<label>: ..." otherwise.
std::vector<std::byte> read_regular_file(const std::string& path, const std::string& label);

}  // namespace ptrain
