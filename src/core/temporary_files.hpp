#pragma once
// Temporary files that a signal must not leave behind. core/atomic_file.hpp
// writes each file to a hidden temporary one first; a SIGINT or SIGTERM in
// the middle (Ctrl-C, a scheduler ending the job) used to leave it there. A
// temporary file is registered while it exists, and once
// remove_temporary_files_on_signals() has installed its handlers, SIGINT,
// SIGTERM and SIGHUP remove every registered file, print one line on stderr
// (if asked) and end the process as the signal would have (the handler that was there
// before, else the default action). The handler only reads a fixed table and
// calls unlink, write and raise (async-signal-safe).
#include <string>

namespace ptrain {

// Installs the handlers (once; later calls do nothing). The ptrain CLI calls
// it first thing; a library user decides for their own process. `announce`:
// print "ptrain: error: stopped by SIGTERM" (not for MPI ranks, which mpirun
// ends with SIGTERM after another rank's error, already printed).
void remove_temporary_files_on_signals(bool announce = true);

// A registered temporary file: registered on construction, released by
// release() (after it was renamed into place or removed) or destruction. A
// file created while a signal's handler runs removes itself at once.
class TemporaryFileGuard {
 public:
  TemporaryFileGuard() = default;
  explicit TemporaryFileGuard(const std::string& path) { hold(path); }
  ~TemporaryFileGuard() { release(); }
  TemporaryFileGuard(const TemporaryFileGuard&) = delete;
  TemporaryFileGuard& operator=(const TemporaryFileGuard&) = delete;
  void release();

  // Creates a new, empty file named `prefix` and 6 random letters or digits
  // (O_EXCL, mode 0600, close-on-exec; another name while one is taken), and
  // holds it from before it exists, so that a signal at any moment leaves no
  // file behind (made first and registered after, it stayed when the signal
  // came in between). Returns its descriptor and sets `path`; -1 with errno
  // set when it cannot be made.
  int create(const std::string& prefix, std::string& path);

 private:
  void hold(const std::string& path);

  int slot_ = -1;  // -1: not in the table (full, or the path too long)
};

// How many temporary files are registered now (for tests).
int registered_temporary_files();

}  // namespace ptrain
